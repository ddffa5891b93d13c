// The raw (headerless) format (see raw_parser.hpp).
#include "formats/raw/raw_parser.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ballast/error.hpp"
#include "util/checked.hpp"
#include "util/error_text.hpp"

namespace ballast {
namespace {

class RawParser final : public FormatParser {
 public:
  WeightFormat format() const override { return WeightFormat::raw(); }
  bool probe(std::span<const std::byte>, uint64_t) const override { return false; }

  Index parse(const ParseContext& ctx) const override {
    const ByteSource& src = *ctx.source;
    if (!ctx.raw_layout)
      throw Error(ErrorCode::invalid_argument,
                  "the raw format needs a layout: a dtype and a shape (and optionally an offset)",
                  {.source = src.name()});
    const RawLayout& layout = *ctx.raw_layout;
    auto numel = checked_numel(layout.shape);
    auto nbytes = numel ? dtype_bytes_for(layout.dtype, *numel) : std::nullopt;
    if (!nbytes)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("shape [{}] of {} does not give a whole number of bytes",
                              fmt::join(layout.shape, ", "), dtype_name(layout.dtype)),
                  {.source = src.name()});
    if (layout.offset > src.size())
      throw Error(ErrorCode::invalid_format,
                  truncated_message(checked_add(layout.offset, *nbytes), src.size()),
                  {.source = src.name(), .offset = layout.offset});
    const uint64_t available = src.size() - layout.offset;
    if (available != *nbytes)
      throw Error(
          ErrorCode::shape_mismatch,
          available < *nbytes
              ? truncated_message(
                    checked_add(layout.offset, *nbytes), src.size(),
                    fmt::format("{} [{}] at offset {}: {} bytes missing", dtype_name(layout.dtype),
                                fmt::join(layout.shape, ", "), layout.offset, *nbytes - available))
              : fmt::format("the file holds {} bytes after offset {}, but {} [{}] needs {} ({} "
                            "bytes too many)",
                            available, layout.offset, dtype_name(layout.dtype),
                            fmt::join(layout.shape, ", "), *nbytes, available - *nbytes),
          {.source = src.name(),
           .tensor = "data",
           .expected = std::to_string(*nbytes),
           .actual = std::to_string(available)});
    Index index;
    index.format = WeightFormat::raw();
    TensorEntry e;
    e.name = "data";
    e.dtype = layout.dtype;
    e.shape = layout.shape;
    e.data = ctx.source;
    e.offset = layout.offset;
    index.tensors.push_back(std::move(e));
    return index;
  }
};

}  // namespace

std::shared_ptr<const FormatParser> make_raw_parser() { return std::make_shared<RawParser>(); }

}  // namespace ballast
