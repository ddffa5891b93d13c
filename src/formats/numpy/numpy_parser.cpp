// The .npy / .npz FormatParser (see numpy_parser.hpp).
#include "formats/numpy/numpy_parser.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ballast/error.hpp"
#include "formats/numpy/npy_header.hpp"
#include "formats/zip/zip_archive.hpp"
#include "util/checked.hpp"
#include "util/error_text.hpp"
#include "util/json_text.hpp"
#include "util/op_count.hpp"

namespace ballast {
namespace {

constexpr std::string_view kNpySuffix = ".npy";

TensorEntry make_entry(std::string name, const NpyHeader& h, std::shared_ptr<ByteSource> data) {
  TensorEntry e;
  e.name = std::move(name);
  e.dtype = h.dtype;
  e.shape = h.shape;
  e.data = std::move(data);
  e.offset = h.data_offset;
  e.byte_order = h.byte_order;
  if (h.fortran_order && h.shape.size() >= 2 && h.nbytes > 0) e.strides = fortran_strides(h.shape);
  return e;
}

Index parse_npy(const ParseContext& ctx) {
  NpyHeader h = read_npy_header(*ctx.source, ctx.limits);
  if (!h.unsupported_reason.empty())
    throw Error(ErrorCode::unsupported,
                fmt::format("{}; the file's only array cannot be loaded", h.unsupported_reason),
                {.source = ctx.source->name(), .offset = 0});
  Index index;
  index.format = WeightFormat::numpy();
  index.tensors.push_back(make_entry("arr_0", h, ctx.source));
  return index;
}

// numpy.load's NpzFile looks a key up as a member name first and with ".npy" appended
// second: with members "a" and "a.npy", its "a" is the member "a" where ballast's is "a.npy".
void refuse_shadowed_arrays(const ZipArchive& archive) {
  for (const ZipMember& m : archive.members()) {
    count_op();
    if (!m.name.ends_with(kNpySuffix)) continue;
    const std::string_view key =
        std::string_view(m.name).substr(0, m.name.size() - kNpySuffix.size());
    if (const ZipMember* twin = archive.find(key))
      throw Error(ErrorCode::invalid_format,
                  fmt::format("members '{}' and '{}' both answer numpy's key '{}'", twin->name,
                              m.name, key),
                  {.source = archive.source()->name(), .offset = m.data_offset});
  }
}

Index parse_npz(const ParseContext& ctx) {
  ZipArchive archive = ZipArchive::open(ctx.source, ctx.limits);
  refuse_shadowed_arrays(archive);
  Index index;
  index.format = WeightFormat::numpy();
  nlohmann::json skipped = nlohmann::json::object();
  for (const ZipMember& m : archive.members()) {
    count_op();
    if (m.name.ends_with('/')) continue;  // a folder entry
    std::shared_ptr<ByteSource> member = archive.member_source(m);
    // numpy.load reads any member that starts like an .npy file as an array, under its whole
    // name when that does not end in ".npy".
    const bool npy_name = m.name.ends_with(kNpySuffix);
    if (!npy_name && !has_npy_magic(member->read(0, std::min<uint64_t>(member->size(), 6)))) {
      skipped[m.name] = "not a .npy member";
      continue;
    }
    std::string name = npy_name ? m.name.substr(0, m.name.size() - kNpySuffix.size()) : m.name;
    NpyHeader h = read_npy_header(*member, ctx.limits);
    if (!h.unsupported_reason.empty()) {
      skipped[name] = h.unsupported_reason;
      continue;
    }
    if (index.tensors.size() == ctx.limits.max_tensors)
      throw Error(ErrorCode::limit_exceeded,
                  limit_message("array count", std::nullopt, "max_tensors", ctx.limits.max_tensors),
                  {.source = ctx.source->name()});
    index.tensors.push_back(make_entry(std::move(name), h, std::move(member)));
  }
  // Names and reasons quote the file's bytes, which need not be UTF-8.
  if (!skipped.empty()) index.extra = lossy_json_text(nlohmann::json{{"skipped", skipped}});
  return index;
}

// A zip is an .npz when its first member's name ends in ".npy" (torch zips start with
// "<root>/data.pkl" or similar), or when it is an empty archive.
bool probe_npz(std::span<const std::byte> head) {
  if (!looks_like_zip(head)) return false;
  if (static_cast<char>(head[2]) == '\x05') return true;
  return first_zip_member_name(head).ends_with(kNpySuffix);
}

class NumpyParser final : public FormatParser {
 public:
  WeightFormat format() const override { return WeightFormat::numpy(); }
  std::vector<std::string> extensions() const override { return {".npy", ".npz"}; }

  bool probe(std::span<const std::byte> head, uint64_t /*total_size*/) const override {
    return has_npy_magic(head) || probe_npz(head);
  }

  Index parse(const ParseContext& context) const override {
    std::vector<std::byte> head =
        context.source->read(0, std::min<uint64_t>(context.source->size(), 6));
    if (has_npy_magic(head) || !looks_like_zip(head)) return parse_npy(context);
    return parse_npz(context);
  }
};

}  // namespace

std::shared_ptr<const FormatParser> make_numpy_parser() { return std::make_shared<NumpyParser>(); }

}  // namespace ballast
