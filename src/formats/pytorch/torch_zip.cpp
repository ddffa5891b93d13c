// Reading the zip container of torch.save (see torch_containers.hpp).
#include <array>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "formats/pytorch/pickle_machine.hpp"
#include "formats/pytorch/torch_checkpoint.hpp"
#include "formats/pytorch/torch_containers.hpp"
#include "formats/zip/zip_archive.hpp"
#include "util/json_text.hpp"

namespace ballast {
namespace {

constexpr std::string_view kPickleRecord = "data.pkl";
constexpr uint64_t kMaxSmallRecord = 256;  // byteorder, version and friends

// Records a torch zip may start with, after its root folder.
constexpr std::array<std::string_view, 5> kLeadingRecords = {
    "data.pkl", ".format_version", ".storage_alignment", "byteorder", "version"};

// The data.pkl member: "<root>/data.pkl" with a single-folder root (or none).
const ZipMember* find_pickle(const ZipArchive& archive, std::string& root) {
  for (const ZipMember& m : archive.members()) {
    if (!m.name.ends_with(kPickleRecord)) continue;
    std::string prefix = m.name.substr(0, m.name.size() - kPickleRecord.size());
    if (!prefix.empty() && (prefix.back() != '/' || prefix.find('/') != prefix.size() - 1))
      continue;
    root = std::move(prefix);
    return &m;
  }
  return nullptr;
}

// A small text record such as "<root>/byteorder", trimmed; empty when absent.
std::string small_record(const ZipArchive& archive, const std::string& name) {
  const ZipMember* m = archive.find(name);
  if (!m) return {};
  if (m->uncompressed_size > kMaxSmallRecord)
    throw Error(ErrorCode::invalid_format,
                fmt::format("record '{}' holds {} bytes; at most {} expected", name,
                            m->uncompressed_size, kMaxSmallRecord),
                {.source = archive.source()->name(), .offset = m->data_offset});
  auto source = archive.member_source(*m);
  std::vector<std::byte> bytes = source->read(0, source->size());
  std::string text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' '))
    text.pop_back();
  return text;
}

ByteOrder parse_byteorder(const std::string& text, const ByteSource& source) {
  if (text.empty() || text == "little") return ByteOrder::little;
  if (text == "big") return ByteOrder::big;
  throw Error(ErrorCode::invalid_format,
              fmt::format("byteorder record says '{}'; expected 'little' or 'big'", text),
              {.source = source.name()});
}

}  // namespace

bool looks_like_torch_zip(std::span<const std::byte> head) {
  std::string_view name = first_zip_member_name(head);
  const size_t slash = name.find('/');
  if (slash != std::string_view::npos) name.remove_prefix(slash + 1);
  for (std::string_view record : kLeadingRecords)
    if (name == record) return true;
  return false;
}

Index parse_torch_zip(const ParseContext& ctx) {
  const ZipArchive archive = ZipArchive::open(ctx.source, ctx.limits);
  const std::string& file = ctx.source->name();
  std::string root;
  const ZipMember* pickle = find_pickle(archive, root);
  if (!pickle)
    throw Error(ErrorCode::invalid_format,
                "zip archive holds no <root>/data.pkl record, so it is no torch.save checkpoint",
                {.source = file});
  const ByteOrder byte_order =
      parse_byteorder(small_record(archive, root + "byteorder"), *ctx.source);

  auto pickle_bytes = archive.member_source(*pickle);
  PickleBudget budget(ctx.limits, pickle_bytes->size(), file);
  PyArena arena(budget);
  TorchHooks hooks(ctx.limits);
  const UnpickleResult result = unpickle({.source = pickle_bytes.get(),
                                          .offset = 0,
                                          .length = pickle_bytes->size(),
                                          .where = pickle->name},
                                         ctx.limits, arena, hooks);
  TorchObjects objects =
      collect_torch_objects(arena, result.value, hooks, ctx.limits, budget, file);

  std::vector<std::shared_ptr<ByteSource>> storage_bytes;
  for (const TorchStorage& s : hooks.storages()) {
    const std::string record = fmt::format("{}data/{}", root, s.key);
    const ZipMember* member = archive.find(record);
    if (!member)
      throw Error(
          ErrorCode::invalid_format,
          fmt::format("the pickle names storage '{}' but record '{}' is missing", s.key, record),
          {.source = file});
    const uint64_t expected = *dtype_bytes_for(s.dtype, s.numel);
    if (member->uncompressed_size != expected)
      throw Error(
          ErrorCode::invalid_format,
          fmt::format("storage '{}' holds {} bytes but the pickle says {} elements of {} "
                      "({} bytes)",
                      s.key, member->uncompressed_size, s.numel, dtype_name(s.dtype), expected),
          {.source = file, .offset = member->data_offset});
    storage_bytes.push_back(archive.member_source(*member));
  }

  Index index;
  index.format = WeightFormat::pytorch();
  index.tensors = torch_entries(objects, hooks, storage_bytes, byte_order, ctx.limits, file);
  nlohmann::json extra = {{"container", "zip"},
                          {"root", root.empty() ? root : root.substr(0, root.size() - 1)},
                          {"pickle_protocol", result.protocol},
                          {"byteorder", byte_order == ByteOrder::big ? "big" : "little"}};
  const std::pair<const char*, const char*> records[] = {
      {"version", "version"},
      {".format_version", "format_version"},
      {".storage_alignment", "storage_alignment"},
      {".data/serialization_id", "serialization_id"}};
  for (const auto& [record, key] : records)
    if (std::string v = small_record(archive, root + record); !v.empty()) extra[key] = v;
  if (!objects.values.empty()) extra["values"] = std::move(objects.values);
  if (!objects.skipped.empty()) extra["skipped"] = std::move(objects.skipped);
  index.extra = lossy_json_text(extra);
  return index;
}

}  // namespace ballast
