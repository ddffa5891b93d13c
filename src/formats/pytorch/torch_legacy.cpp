// Reading the legacy (pre-zip) container of torch.save (see torch_containers.hpp).
#include <array>
#include <cstring>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "formats/pytorch/pickle_machine.hpp"
#include "formats/pytorch/torch_checkpoint.hpp"
#include "formats/pytorch/torch_containers.hpp"
#include "util/checked.hpp"
#include "util/error_text.hpp"
#include "util/json_text.hpp"
#include "util/op_count.hpp"

namespace ballast {
namespace {

// 0x1950a86a20f9469cfc6c, torch.serialization.MAGIC_NUMBER, as pickled: little-endian bytes
// (LONG1, protocol 2+) or decimal text (LONG, protocols 0 and 1).
constexpr std::array<uint8_t, 10> kMagic = {0x6c, 0xfc, 0x9c, 0x46, 0xf9,
                                            0x20, 0x6a, 0xa8, 0x50, 0x19};
constexpr std::string_view kMagicText = "L119547037146038801333356L\n";
constexpr int64_t kProtocolVersion = 1001;

bool is_magic(const PyValue& v) {
  return v.kind == PyKind::big_integer && v.text.size() == kMagic.size() &&
         std::memcmp(v.text.data(), kMagic.data(), kMagic.size()) == 0;
}

// The value of key `name` in a pickled dict, or null.
const PyValue* dict_get(const PyArena& arena, const PyValue& dict, std::string_view name) {
  for (size_t i = 0; i + 1 < dict.items.size(); i += 2) {
    const PyValue& key = arena[dict.items[i]];
    if (key.kind == PyKind::string && key.text == name) return &arena[dict.items[i + 1]];
  }
  return nullptr;
}

class LegacyReader {
 public:
  explicit LegacyReader(const ParseContext& ctx)
      : ctx_(ctx),
        file_(ctx.source->name()),
        budget_(ctx.limits, ctx.source->size(), ctx.source->name()),
        arena_(budget_),
        hooks_(ctx.limits) {}

  Index read() {
    if (!is_magic(arena_[next("the magic number").value]))
      fail("the first pickle is not torch's magic number");
    const PyValue& version = arena_[next("the protocol version").value];
    if (version.kind != PyKind::integer || version.integer != kProtocolVersion)
      fail(fmt::format("legacy protocol version is not {}", kProtocolVersion));
    const ByteOrder byte_order = read_sys_info(arena_[next("sys_info").value]);
    const UnpickleResult object = next("the checkpoint object");
    TorchObjects objects =
        collect_torch_objects(arena_, object.value, hooks_, ctx_.limits, budget_, file_);
    const PyId keys = next("the storage key list").value;
    std::vector<std::shared_ptr<ByteSource>> storage_bytes = read_storages(keys, byte_order);

    Index index;
    index.format = WeightFormat::pytorch();
    index.tensors = torch_entries(objects, hooks_, storage_bytes, byte_order, ctx_.limits, file_);
    nlohmann::json extra = {{"container", "legacy"},
                            {"pickle_protocol", object.protocol},
                            {"byteorder", byte_order == ByteOrder::big ? "big" : "little"}};
    if (!objects.values.empty()) extra["values"] = std::move(objects.values);
    if (!objects.skipped.empty()) extra["skipped"] = std::move(objects.skipped);
    index.extra = lossy_json_text(extra);
    return index;
  }

 private:
  UnpickleResult next(std::string_view what) {
    const ByteSource& source = *ctx_.source;
    UnpickleResult r = unpickle({.source = &source,
                                 .offset = pos_,
                                 .length = source.size() - pos_,
                                 .where = fmt::format("{} (legacy torch.save)", what)},
                                ctx_.limits, arena_, hooks_);
    pos_ = r.end;
    return r;
  }

  [[noreturn]] void fail(std::string message, std::optional<uint64_t> offset = {}) const {
    throw Error(ErrorCode::invalid_format, std::move(message),
                {.source = file_, .offset = offset.value_or(pos_)});
  }

  ByteOrder read_sys_info(const PyValue& sys_info) const {
    if (sys_info.kind != PyKind::dict) fail("sys_info is not a dict");
    const PyValue* little = dict_get(arena_, sys_info, "little_endian");
    if (little && little->kind == PyKind::boolean && little->integer == 0) return ByteOrder::big;
    return ByteOrder::little;
  }

  // Walks the storages after the key list: each an 8-byte element count, then its bytes.
  std::vector<std::shared_ptr<ByteSource>> read_storages(PyId keys_id, ByteOrder byte_order) {
    const PyValue& keys = arena_[keys_id];
    if (keys.kind != PyKind::list) fail("the storage key list is not a list");
    const RootStorages named = root_storages();
    RootSources roots;
    const ByteSource& source = *ctx_.source;
    for (PyId key_id : keys.items) {
      const PyValue& key = arena_[key_id];
      if (key.kind != PyKind::string) fail("a storage key is not a string");
      auto named_it = named.find(key.text);
      if (named_it == named.end())
        fail(fmt::format("storage '{}' is listed but never used", key.text));
      const TorchStorage& storage = *named_it->second;
      uint64_t count = 0;
      if (!range_inside(pos_, 8, source.size()))
        fail(truncated_message(checked_add(pos_, 8), source.size(),
                               fmt::format("the element count of storage '{}'", key.text)));
      source.read_at(pos_, {reinterpret_cast<std::byte*>(&count), 8});
      if (byte_order == ByteOrder::big) count = __builtin_bswap64(count);
      if (count != storage.numel)
        fail(fmt::format("storage '{}' records {} elements but the pickle says {}", key.text, count,
                         storage.numel));
      const uint64_t nbytes = *dtype_bytes_for(storage.dtype, count);
      if (!range_inside(pos_ + 8, nbytes, source.size()))
        fail(truncated_message(checked_add(pos_ + 8, nbytes), source.size(),
                               fmt::format("storage '{}'", key.text)));
      if (!roots.emplace(key.text, make_slice_source(ctx_.source, pos_ + 8, nbytes, file_)).second)
        fail(fmt::format("storage '{}' is listed twice", key.text));
      pos_ += 8 + nbytes;
    }
    std::vector<std::shared_ptr<ByteSource>> bytes;
    for (const TorchStorage& s : hooks_.storages()) {
      auto root = roots.find(s.key);
      if (root == roots.end())
        fail(
            fmt::format("the pickle names storage '{}' but the file holds no such storage", s.key));
      const uint64_t element_size = dtype_element_size(s.dtype);
      if (s.view_offset == 0 && s.view_numel == s.numel)
        bytes.push_back(root->second);
      else
        bytes.push_back(make_slice_source(root->second, s.view_offset * element_size,
                                          s.view_numel * element_size, file_));
    }
    return bytes;
  }

  using RootStorages =
      std::unordered_map<std::string_view, const TorchStorage*, StringHash, CountedEqual>;
  using RootSources =
      std::unordered_map<std::string, std::shared_ptr<ByteSource>, StringHash, CountedEqual>;

  // The first record of each key: whole storages and views share their root's key and type.
  RootStorages root_storages() const {
    RootStorages out;
    for (const TorchStorage& s : hooks_.storages()) out.try_emplace(s.key, &s);
    return out;
  }

  const ParseContext& ctx_;
  const std::string& file_;
  PickleBudget budget_;
  PyArena arena_;
  TorchHooks hooks_;
  uint64_t pos_ = 0;
};

}  // namespace

bool looks_like_torch_legacy(std::span<const std::byte> head) {
  auto bytes = [&](size_t at, size_t n) -> std::span<const std::byte> {
    return at <= head.size() && n <= head.size() - at ? head.subspan(at, n)
                                                      : std::span<const std::byte>{};
  };
  auto equals = [](std::span<const std::byte> got, const void* want, size_t n) {
    return got.size() == n && std::memcmp(got.data(), want, n) == 0;
  };
  if (equals(bytes(0, kMagicText.size()), kMagicText.data(), kMagicText.size())) return true;
  if (head.size() < 2 || head[0] != std::byte{0x80}) return false;
  size_t at = 2;
  if (bytes(at, 1).size() == 1 && head[at] == std::byte{0x95}) at += 9;  // FRAME
  const uint8_t long1[2] = {0x8a, 0x0a};
  return equals(bytes(at, 2), long1, 2) &&
         equals(bytes(at + 2, kMagic.size()), kMagic.data(), kMagic.size());
}

Index parse_torch_legacy(const ParseContext& context) { return LegacyReader(context).read(); }

}  // namespace ballast
