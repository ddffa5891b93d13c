// GGUF header parsing and validation (layout in gguf_parser.hpp).
#include "formats/gguf/gguf_parser.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <unordered_set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ballast/error.hpp"
#include "formats/gguf/ggml_types.hpp"
#include "formats/gguf/gguf_cursor.hpp"
#include "formats/gguf/gguf_metadata.hpp"
#include "util/checked.hpp"
#include "util/error_text.hpp"
#include "util/op_count.hpp"

namespace ballast {
namespace {

constexpr std::string_view kMagic = "GGUF";
constexpr uint64_t kDefaultAlignment = 32;
constexpr uint32_t kGgmlMaxDims = 4;
constexpr std::string_view kAlignmentKey = "general.alignment";

// The split.* values of one shard (see gguf_split.hpp).
struct SplitKeys {
  std::optional<int64_t> no, count, tensors;
};

class GgufReader {
 public:
  explicit GgufReader(const ParseContext& ctx) : ctx_(ctx), cursor_(*ctx.source, ctx.limits) {}

  Index parse() {
    read_header();
    read_metadata();
    read_tensor_infos();
    place_tensors();
    check_split();
    Index index;
    index.format = WeightFormat::gguf();
    index.tensors = std::move(tensors_);
    index.extra = to_json(metadata_);
    index.extra_values = std::move(metadata_);
    return index;
  }

 private:
  void read_header() {
    if (cursor_.source_size() < kMagic.size())
      cursor_.fail(ErrorCode::invalid_format,
                   truncated_message(kMagic.size(), cursor_.source_size()), 0);
    const uint32_t magic = cursor_.u32();
    if (std::memcmp(&magic, kMagic.data(), kMagic.size()) != 0)
      cursor_.fail(ErrorCode::invalid_format,
                   fmt::format("not a GGUF file: magic is 0x{:08x}, expected \"GGUF\"", magic), 0);
    const uint32_t version = cursor_.u32();
    if (version != 2 && version != 3) {
      const uint32_t swapped = std::byteswap(version);
      if (swapped >= 1 && swapped <= 3)
        cursor_.fail(ErrorCode::unsupported,
                     fmt::format("big-endian GGUF is not supported (version field 0x{:08x} is "
                                 "version {} byte-swapped)",
                                 version, swapped),
                     4);
      cursor_.fail(
          ErrorCode::unsupported,
          fmt::format("GGUF version {} is not supported (ballast reads versions 2 and 3)", version),
          4);
    }
    n_tensors_ = cursor_.u64();
    if (n_tensors_ > ctx_.limits.max_tensors)
      cursor_.fail(
          ErrorCode::limit_exceeded,
          limit_message("tensor count", n_tensors_, "max_tensors", ctx_.limits.max_tensors), 8);
    n_kv_ = cursor_.u64();
    if (n_kv_ > ctx_.limits.max_metadata_entries)
      cursor_.fail(ErrorCode::limit_exceeded,
                   limit_message("KV count", n_kv_, "max_metadata_entries",
                                 ctx_.limits.max_metadata_entries),
                   16);
  }

  void read_metadata() {
    GgufMetadataReader reader(cursor_, n_kv_);
    MetadataValue::Members members;
    std::unordered_set<std::string, StringHash, CountedEqual> keys;
    for (uint64_t i = 0; i < n_kv_; ++i) {
      GgufKv kv = reader.next();
      if (!keys.insert(kv.key).second)
        cursor_.fail(ErrorCode::invalid_format, fmt::format("duplicate metadata key '{}'", kv.key),
                     kv.offset);
      if (kv.key == kAlignmentKey) read_alignment(kv);
      read_split_key(kv);
      members.emplace_back(std::move(kv.key), std::move(kv.value));
    }
    metadata_ = MetadataValue::object(std::move(members));
  }

  void read_alignment(const GgufKv& kv) {
    if (kv.type != GgufValueType::u32)
      cursor_.fail(ErrorCode::invalid_format, "general.alignment is not a u32", kv.offset);
    const auto a = static_cast<uint64_t>(*kv.integer);
    if (!std::has_single_bit(a))
      cursor_.fail(ErrorCode::invalid_format,
                   fmt::format("general.alignment {} is not a nonzero power of two", a), kv.offset);
    alignment_ = a;
  }

  void read_split_key(const GgufKv& kv) {
    std::optional<int64_t>* slot = kv.key == "split.no"              ? &split_.no
                                   : kv.key == "split.count"         ? &split_.count
                                   : kv.key == "split.tensors.count" ? &split_.tensors
                                                                     : nullptr;
    if (!slot) return;
    if (!kv.integer || *kv.integer < 0 || *kv.integer > 0x7FFFFFFF)
      cursor_.fail(ErrorCode::invalid_format,
                   fmt::format("{} is not a non-negative 32-bit integer", kv.key), kv.offset);
    *slot = *kv.integer;
  }

  void read_tensor_infos() {
    std::unordered_set<std::string, StringHash, CountedEqual> names;
    // Each tensor info takes at least 24 bytes, so the file bounds what is worth reserving.
    tensors_.reserve(static_cast<size_t>(
        std::min<uint64_t>(n_tensors_, (cursor_.source_size() - cursor_.offset()) / 24)));
    for (uint64_t i = 0; i < n_tensors_; ++i) {
      count_op();
      TensorEntry e = read_tensor_info();
      if (!names.insert(e.name).second)
        cursor_.fail(ErrorCode::invalid_format, "duplicate tensor name", info_offsets_.back(),
                     e.name);
      tensors_.push_back(std::move(e));
    }
  }

  TensorEntry read_tensor_info() {
    const uint64_t at = cursor_.offset();
    info_offsets_.push_back(at);
    TensorEntry e;
    e.name = cursor_.name("tensor name");
    const uint32_t n_dims = cursor_.u32();
    if (n_dims > kGgmlMaxDims)
      cursor_.fail(
          ErrorCode::invalid_format,
          fmt::format("tensor has {} dimensions; GGUF allows at most {}", n_dims, kGgmlMaxDims), at,
          e.name);
    if (n_dims > ctx_.limits.max_dims)
      cursor_.fail(ErrorCode::limit_exceeded,
                   limit_message("rank", n_dims, "max_dims", ctx_.limits.max_dims), at, e.name);
    std::vector<int64_t> ne(n_dims);
    for (int64_t& d : ne) {
      const uint64_t v = cursor_.u64();
      if (v > static_cast<uint64_t>(INT64_MAX))
        cursor_.fail(ErrorCode::invalid_format,
                     fmt::format("dimension {} is negative as a signed 64-bit count",
                                 static_cast<int64_t>(v)),
                     at, e.name);
      d = static_cast<int64_t>(v);
    }
    const uint32_t type_id = cursor_.u32();
    const uint64_t relative = cursor_.u64();
    auto type = find_ggml_type(type_id);
    if (!type)
      cursor_.fail(ErrorCode::unsupported,
                   fmt::format("unknown or removed ggml type id {}", type_id), at, e.name);
    e.dtype = type->dtype;
    e.shape.assign(ne.rbegin(), ne.rend());
    check_size(e, ne, *type, at);
    if (relative % alignment_ != 0)
      cursor_.fail(
          ErrorCode::invalid_format,
          fmt::format("data offset {} is not a multiple of the alignment {}", relative, alignment_),
          at, e.name);
    e.offset = relative;  // made absolute in place_tensors
    e.data = ctx_.source;
    return e;
  }

  void check_size(const TensorEntry& e, const std::vector<int64_t>& ne, const GgmlType& type,
                  uint64_t at) {
    auto numel = checked_numel(ne);
    if (!numel)
      cursor_.fail(ErrorCode::invalid_format,
                   fmt::format("element count of ne {} overflows", fmt::join(ne, "x")), at, e.name);
    if (!ne.empty() && static_cast<uint64_t>(ne[0]) % type.block_elements != 0)
      cursor_.fail(ErrorCode::invalid_format,
                   fmt::format("ne[0] = {} is not a multiple of the {}-element {} block", ne[0],
                               type.block_elements, type.name),
                   at, e.name);
    auto nbytes = dtype_bytes_for(type.dtype, *numel);
    if (!nbytes)
      cursor_.fail(ErrorCode::invalid_format, "byte size of the tensor overflows", at, e.name);
    if (*nbytes > ctx_.limits.max_tensor_bytes)
      cursor_.fail(ErrorCode::limit_exceeded,
                   limit_message("tensor size in bytes", *nbytes, "max_tensor_bytes",
                                 ctx_.limits.max_tensor_bytes),
                   at, e.name);
  }

  // Makes offsets absolute and checks that each tensor lies in the file, apart from the others.
  void place_tensors() {
    const uint64_t header_end = cursor_.offset();
    auto padded = checked_add(header_end, alignment_ - 1);
    if (!padded) cursor_.fail(ErrorCode::invalid_format, "data section offset overflows", 0);
    const uint64_t data_start = *padded / alignment_ * alignment_;
    const uint64_t size = cursor_.source_size();
    for (size_t i = 0; i < tensors_.size(); ++i) {
      TensorEntry& e = tensors_[i];
      auto begin = checked_add(data_start, e.offset);
      if (!begin || !range_inside(*begin, e.nbytes(), size))
        cursor_.fail(ErrorCode::invalid_format,
                     truncated_message(begin ? checked_add(*begin, e.nbytes()) : std::nullopt, size,
                                       "tensor data"),
                     info_offsets_[i], e.name);
      e.offset = *begin;
    }
    check_overlaps();
  }

  void check_overlaps() const {
    std::vector<const TensorEntry*> sorted;
    for (const auto& e : tensors_)
      if (e.nbytes() > 0) sorted.push_back(&e);
    std::sort(sorted.begin(), sorted.end(),
              [](const TensorEntry* a, const TensorEntry* b) { return a->offset < b->offset; });
    for (size_t i = 1; i < sorted.size(); ++i) {
      const TensorEntry& prev = *sorted[i - 1];
      if (sorted[i]->offset < prev.offset + prev.nbytes())
        cursor_.fail(ErrorCode::invalid_format,
                     fmt::format("tensor data overlaps tensor '{}' ([{}, {}))", prev.name,
                                 prev.offset, prev.offset + prev.nbytes()),
                     sorted[i]->offset, sorted[i]->name);
    }
  }

  // split.no / split.count agree with each other, with the tensor count and with the file name.
  void check_split() const {
    if (!split_.no && !split_.count && !split_.tensors) return;
    auto bad = [&](std::string message) {
      cursor_.fail(ErrorCode::invalid_format, std::move(message), 0);
    };
    const int64_t count = split_.count.value_or(0);
    if (count > 0 && !split_.no) bad("split.count is set but split.no is missing");
    if (split_.no && count > 0 && *split_.no >= count)
      bad(fmt::format("split.no {} is not below split.count {}", *split_.no, count));
    if (split_.tensors && static_cast<uint64_t>(*split_.tensors) < tensors_.size())
      bad(fmt::format("split.tensors.count {} is less than the {} tensors in this shard",
                      *split_.tensors, tensors_.size()));
    auto name = parse_gguf_split_name(cursor_.source_name());
    if (!name || count == 0) return;
    if (name->count != count || name->index != *split_.no + 1)
      bad(fmt::format("file name says shard {} of {}, but split.no = {} and split.count = {}",
                      name->index, name->count, *split_.no, count));
  }

  const ParseContext& ctx_;
  GgufCursor cursor_;
  uint64_t n_tensors_ = 0;
  uint64_t n_kv_ = 0;
  uint64_t alignment_ = kDefaultAlignment;
  MetadataValue metadata_;  // the KV pairs, in file order
  SplitKeys split_;
  std::vector<TensorEntry> tensors_;
  std::vector<uint64_t> info_offsets_;
};

class GgufParser final : public FormatParser {
 public:
  WeightFormat format() const override { return WeightFormat::gguf(); }
  std::vector<std::string> extensions() const override { return {".gguf"}; }
  bool probe(std::span<const std::byte> head, uint64_t) const override {
    return head.size() >= kMagic.size() && std::memcmp(head.data(), kMagic.data(), 4) == 0;
  }
  Index parse(const ParseContext& context) const override { return GgufReader(context).parse(); }
};

}  // namespace

std::shared_ptr<const FormatParser> make_gguf_parser() { return std::make_shared<GgufParser>(); }

}  // namespace ballast
