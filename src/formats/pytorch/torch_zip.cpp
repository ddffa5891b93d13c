// Reading the zip container of torch.save (see torch_containers.hpp).
#include <algorithm>
#include <array>
#include <unordered_map>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "formats/pytorch/pickle_machine.hpp"
#include "formats/pytorch/torch_checkpoint.hpp"
#include "formats/pytorch/torch_containers.hpp"
#include "formats/zip/zip_archive.hpp"
#include "util/json_text.hpp"
#include "util/op_count.hpp"

namespace ballast {
namespace {

constexpr std::string_view kPickleRecord = "data.pkl";
constexpr uint64_t kMaxSmallRecord = 256;  // byteorder, version and friends

// Records a torch zip may start with, after its root folder.
constexpr std::array<std::string_view, 5> kLeadingRecords = {
    "data.pkl", ".format_version", ".storage_alignment", "byteorder", "version"};

// torch.load (PyTorchStreamReader) takes the folder of the directory's first member as the
// root of every record, and refuses an archive whose first member is in no folder.
std::string torch_root(const ZipArchive& archive, const std::string& file) {
  if (archive.members().empty())
    throw Error(ErrorCode::invalid_format,
                "zip archive is empty, so it is no torch.save checkpoint",
                {.source = file, .offset = 0});
  const ZipMember& first = archive.members().front();
  const size_t slash = first.name.find('/');
  if (slash == std::string::npos)
    throw Error(ErrorCode::invalid_format,
                fmt::format("the first member '{}' is in no folder, so the archive has no root "
                            "folder as torch.load expects",
                            first.name),
                {.source = file, .offset = 0});
  return first.name.substr(0, slash + 1);
}

// torch.load finds records by a case-insensitive search (miniz's sorted lookup): two names that
// differ only in ASCII case could each be the record it reads.
void refuse_case_twins(const ZipArchive& archive, const std::string& file) {
  std::unordered_map<std::string, const ZipMember*> seen;
  seen.reserve(archive.members().size());
  for (const ZipMember& m : archive.members()) {
    count_op();
    std::string folded = m.name;
    std::transform(folded.begin(), folded.end(), folded.begin(), [](char c) {
      return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
    });
    auto [it, fresh] = seen.emplace(std::move(folded), &m);
    if (!fresh)
      throw Error(ErrorCode::invalid_format,
                  fmt::format("members '{}' and '{}' differ only in case, which torch.load does "
                              "not tell apart",
                              it->second->name, m.name),
                  {.source = file, .offset = m.data_offset});
  }
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

// torch.load refuses an archive without "<root>/.data/version" or "<root>/version", or whose
// version is not a positive number.
void check_version_record(const ZipArchive& archive, const std::string& root,
                          const std::string& file) {
  const ZipMember* record = archive.find(root + ".data/version");
  if (!record) record = archive.find(root + "version");
  if (!record)
    throw Error(ErrorCode::invalid_format,
                fmt::format("no {}version record, which torch.load requires", root),
                {.source = file, .offset = 0});
  const std::string version = small_record(archive, record->name);
  if (version.empty() || version.find_first_not_of("0123456789") != std::string::npos ||
      version.find_first_not_of('0') == std::string::npos)
    throw Error(ErrorCode::invalid_format,
                fmt::format("version record '{}' is not a positive number", version),
                {.source = file, .offset = record->data_offset});
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
  refuse_case_twins(archive, file);
  const std::string root = torch_root(archive, file);
  const ZipMember* pickle = archive.find(root + std::string(kPickleRecord));
  if (!pickle)
    throw Error(ErrorCode::invalid_format,
                "zip archive holds no <root>/data.pkl record, so it is no torch.save checkpoint",
                {.source = file});
  check_version_record(archive, root, file);
  // torch.load hands an archive holding a constants.pkl record to torch.jit.load.
  if (const ZipMember* constants = archive.find(root + "constants.pkl"))
    throw Error(ErrorCode::unsupported,
                "the archive holds constants.pkl: a TorchScript archive, which torch.load reads as "
                "a scripted module, not a checkpoint",
                {.source = file, .offset = constants->data_offset});
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
                          {"root", root.substr(0, root.size() - 1)},
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
