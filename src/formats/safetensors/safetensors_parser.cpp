// Safetensors header parsing and validation (layout in safetensors_parser.hpp).
#include "formats/safetensors/safetensors_parser.hpp"

#include <algorithm>
#include <array>
#include <cstring>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "formats/safetensors/header_sax.hpp"
#include "util/checked.hpp"
#include "util/error_text.hpp"

namespace ballast {
namespace {

struct DTypeName {
  std::string_view name;
  DType dtype;
};
constexpr std::array kDTypes = {
    DTypeName{"F64", DType::f64},
    DTypeName{"F32", DType::f32},
    DTypeName{"F16", DType::f16},
    DTypeName{"BF16", DType::bf16},
    DTypeName{"F8_E4M3", DType::f8_e4m3},
    DTypeName{"F8_E5M2", DType::f8_e5m2},
    DTypeName{"F8_E4M3FNUZ", DType::f8_e4m3fnuz},
    DTypeName{"F8_E5M2FNUZ", DType::f8_e5m2fnuz},
    DTypeName{"F8_E8M0", DType::f8_e8m0},
    DTypeName{"F6_E2M3", DType::f6_e2m3},
    DTypeName{"F6_E3M2", DType::f6_e3m2},
    DTypeName{"F4", DType::f4_e2m1},
    DTypeName{"I64", DType::i64},
    DTypeName{"I32", DType::i32},
    DTypeName{"I16", DType::i16},
    DTypeName{"I8", DType::i8},
    DTypeName{"U64", DType::u64},
    DTypeName{"U32", DType::u32},
    DTypeName{"U16", DType::u16},
    DTypeName{"U8", DType::u8},
    DTypeName{"BOOL", DType::boolean},
    DTypeName{"C64", DType::c64},
};

constexpr uint64_t kLengthBytes = 8;

class HeaderReader {
 public:
  HeaderReader(const ParseContext& ctx) : ctx_(ctx), source_(*ctx.source) {}

  Index parse() {
    const uint64_t header_length = read_length();
    data_start_ = kLengthBytes + header_length;
    data_size_ = source_.size() - data_start_;
    const std::vector<std::byte> bytes = source_.read(kLengthBytes, header_length);
    const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());

    Index index;
    index.format = WeightFormat::safetensors();
    const HeaderSaxLimits limits{.max_depth = ctx_.limits.max_json_depth,
                                 .max_kept_numbers = std::max(ctx_.limits.max_dims, 2u),
                                 .base_offset = kLengthBytes};
    try {
      index.extra = read_safetensors_header(
          text, limits, [&](RawHeaderEntry& raw) { index.tensors.push_back(entry(raw)); });
    } catch (Error& e) {
      e.with_source(source_.name());
      throw;
    }
    sort_and_refuse_duplicates(index);
    check_tiling(index);
    return index;
  }

 private:
  [[noreturn]] void fail(ErrorCode code, std::string message, std::string tensor = {},
                         std::optional<uint64_t> offset = std::nullopt) const {
    throw Error(code, std::move(message),
                {.source = source_.name(), .tensor = std::move(tensor), .offset = offset});
  }

  uint64_t read_length() const {
    if (source_.size() < kLengthBytes)
      fail(
          ErrorCode::invalid_format,
          fmt::format("file of {} bytes is too short for the 8-byte header length", source_.size()),
          {}, 0);
    std::array<std::byte, kLengthBytes> raw{};
    source_.read_at(0, raw);
    uint64_t n = 0;
    for (size_t i = 0; i < kLengthBytes; ++i) n |= static_cast<uint64_t>(raw[i]) << (8 * i);
    if (n > ctx_.limits.max_header_bytes)
      fail(ErrorCode::limit_exceeded,
           limit_message("header length", n, "max_header_bytes", ctx_.limits.max_header_bytes), {},
           0);
    if (n > source_.size() - kLengthBytes)
      fail(ErrorCode::invalid_format,
           truncated_message(kLengthBytes + n, source_.size(), "the header"), {}, 0);
    if (n < 2)
      fail(ErrorCode::invalid_format, "header is shorter than an empty JSON object", {}, 0);
    return n;
  }

  static std::optional<DType> parse_dtype_name(std::string_view name) {
    for (const auto& d : kDTypes)
      if (d.name == name) return d.dtype;
    return std::nullopt;
  }

  TensorEntry entry(RawHeaderEntry& raw) const {
    const std::string& name = raw.name;
    if (!raw.dtype) fail(ErrorCode::invalid_format, "tensor entry lacks a string 'dtype'", name);
    if (!raw.shape.present)
      fail(ErrorCode::invalid_format, "tensor entry lacks a 'shape' array", name);
    if (!raw.data_offsets.present || raw.data_offsets.count != 2)
      fail(ErrorCode::invalid_format, "tensor entry lacks 'data_offsets' [begin, end]", name);

    const std::optional<DType> dtype = parse_dtype_name(*raw.dtype);
    if (!dtype)
      fail(ErrorCode::unsupported, fmt::format("unknown safetensors dtype '{}'", *raw.dtype), name);
    if (raw.shape.count > ctx_.limits.max_dims)
      fail(ErrorCode::limit_exceeded,
           limit_message("rank", raw.shape.count, "max_dims", ctx_.limits.max_dims), name);
    if (!raw.shape.all_unsigned)
      fail(ErrorCode::invalid_format, "shape holds a value that is not a non-negative integer",
           name);
    if (!raw.data_offsets.all_unsigned)
      fail(ErrorCode::invalid_format, "data_offsets are not non-negative integers", name);

    TensorEntry e;
    e.dtype = *dtype;
    e.shape.reserve(raw.shape.kept.size());
    for (uint64_t dim : raw.shape.kept) {
      if (dim > static_cast<uint64_t>(INT64_MAX))
        fail(ErrorCode::invalid_format, "shape dimension overflows", name);
      e.shape.push_back(static_cast<int64_t>(dim));
    }
    const uint64_t begin = raw.data_offsets.kept[0], end = raw.data_offsets.kept[1];
    if (end < begin)
      fail(ErrorCode::invalid_format, fmt::format("data_offsets end {} < begin {}", end, begin),
           name);
    if (end > data_size_)
      fail(ErrorCode::invalid_format,
           truncated_message(checked_add(data_start_, end), data_start_ + data_size_), name,
           data_start_ + begin);

    auto numel = checked_numel(e.shape);
    if (!numel) fail(ErrorCode::invalid_format, "shape element count overflows", name);
    auto nbytes = dtype_bytes_for(e.dtype, *numel);
    if (!nbytes)
      fail(ErrorCode::invalid_format,
           fmt::format("{} elements of {} do not fill whole bytes", *numel, dtype_name(e.dtype)),
           name);
    if (*nbytes != end - begin)
      fail(ErrorCode::invalid_format,
           fmt::format("data_offsets span {} bytes but shape and dtype need {}", end - begin,
                       *nbytes),
           name, data_start_ + begin);
    e.name = std::move(raw.name);
    e.data = ctx_.source;
    e.offset = data_start_ + begin;
    return e;
  }

  // Entries in name order, as the JSON object would hold them; a name twice is refused
  // (compared decoded, so "a" and "\u0061" collide).
  void sort_and_refuse_duplicates(Index& index) const {
    auto& tensors = index.tensors;
    std::sort(tensors.begin(), tensors.end(),
              [](const TensorEntry& a, const TensorEntry& b) { return a.name < b.name; });
    const auto twice = std::adjacent_find(
        tensors.begin(), tensors.end(),
        [](const TensorEntry& a, const TensorEntry& b) { return a.name == b.name; });
    if (twice != tensors.end())
      fail(ErrorCode::invalid_format, "duplicate tensor name in header", twice->name, kLengthBytes);
  }

  // The byte ranges, sorted, must cover the data buffer exactly once.
  void check_tiling(const Index& index) const {
    std::vector<const TensorEntry*> sorted;
    sorted.reserve(index.tensors.size());
    for (const auto& e : index.tensors) sorted.push_back(&e);
    std::sort(sorted.begin(), sorted.end(), [](const TensorEntry* a, const TensorEntry* b) {
      return a->offset != b->offset ? a->offset < b->offset : a->nbytes() < b->nbytes();
    });
    uint64_t expected = data_start_;
    for (const TensorEntry* e : sorted) {
      if (e->offset < expected)
        fail(ErrorCode::invalid_format,
             fmt::format("tensor bytes overlap the previous tensor (begin {} < {})",
                         e->offset - data_start_, expected - data_start_),
             e->name, e->offset);
      if (e->offset > expected)
        fail(ErrorCode::invalid_format,
             fmt::format("gap of {} unused bytes in the data buffer before this tensor",
                         e->offset - expected),
             e->name, expected);
      expected = e->offset + e->nbytes();
    }
    if (expected != source_.size())
      fail(ErrorCode::invalid_format,
           fmt::format("{} trailing bytes after the last tensor", source_.size() - expected), {},
           expected);
  }

  const ParseContext& ctx_;
  const ByteSource& source_;
  uint64_t data_start_ = 0;
  uint64_t data_size_ = 0;
};

class SafetensorsParser final : public FormatParser {
 public:
  WeightFormat format() const override { return WeightFormat::safetensors(); }
  std::vector<std::string> extensions() const override { return {".safetensors"}; }

  // The length is not checked against the file here, so that an oversized or truncated
  // header is reported as a broken safetensors file rather than an unknown format. The JSON
  // may start after whitespace, as the official crate (serde_json) allows.
  bool probe(std::span<const std::byte> head, uint64_t) const override {
    if (head.size() < 10) return false;
    uint64_t n = 0;
    for (size_t i = 0; i < 8; ++i) n |= static_cast<uint64_t>(head[i]) << (8 * i);
    if (n < 2 || n >= (1ULL << 40)) return false;
    for (size_t i = 8; i < head.size() && i - 8 < n; ++i) {
      const char c = static_cast<char>(head[i]);
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return c == '{';
    }
    return false;
  }

  Index parse(const ParseContext& context) const override { return HeaderReader(context).parse(); }
};

}  // namespace

std::shared_ptr<const FormatParser> make_safetensors_parser() {
  return std::make_shared<SafetensorsParser>();
}

}  // namespace ballast
