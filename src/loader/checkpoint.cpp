// Checkpoint: lazy, shard-aware access to the Index of a source (see checkpoint.hpp).
#include "loader/checkpoint.hpp"

#include <algorithm>
#include <unordered_set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ballast/error.hpp"
#include "core/metadata_json.hpp"
#include "formats/detect.hpp"
#include "formats/validate.hpp"
#include "loader/checkpoint_layout.hpp"
#include "remote/source_store.hpp"
#include "util/closest_names.hpp"
#include "util/op_count.hpp"

namespace ballast {
namespace {

void merge_into(nlohmann::json& into, const std::string& text) {
  auto more = nlohmann::json::parse(text, nullptr, false);
  if (!more.is_object()) return;
  for (auto& [k, v] : more.items())
    if (!into.contains(k)) into[k] = v;
}

// Adds the members of `more` (an object) whose keys are not in `keys` yet.
void merge_into(MetadataValue::Members& into,
                std::unordered_set<std::string, StringHash, CountedEqual>& keys,
                const MetadataValue& more) {
  if (more.type() != MetadataType::object) return;
  for (const auto& [key, value] : more.members())
    if (keys.insert(key).second) into.emplace_back(key, value);
}

}  // namespace

Checkpoint::Checkpoint(std::string description, std::shared_ptr<Store> store,
                       CheckpointOptions options, const WeightSource& source)
    : description_(std::move(description)),
      store_(std::move(store)),
      options_(std::move(options)),
      parsing_{source.format, source.raw_layout, options_.limits, options_.verify_checksums} {}

void Checkpoint::add_shard(std::string object) {
  auto shard = std::make_unique<Shard>();
  shard->name = store_->describe(object);
  shard->object = std::move(object);
  shards_.push_back(std::move(shard));
}

std::shared_ptr<Checkpoint> Checkpoint::open(const WeightSource& source,
                                             std::shared_ptr<Store> store,
                                             const CheckpointOptions& options) {
  std::shared_ptr<Checkpoint> cp(
      new Checkpoint(describe(source), std::move(store), options, source));
  cp->only_tensor_ = only_tensor_of(source);
  CheckpointLayout layout = resolve_layout(*cp->store_, options.limits, *options.os);
  cp->weight_map_ = std::move(layout.weight_map);
  cp->index_metadata_ = std::move(layout.metadata);
  cp->ignored_ = std::move(layout.ignored);
  for (auto& object : layout.shards) cp->add_shard(std::move(object));
  return cp;
}

Index parse_shard_input(const ShardInput& input, const ShardParsing& how) {
  ParseContext ctx;
  ctx.limits = how.limits;
  ctx.raw_layout = how.raw_layout;
  ctx.verify_checksums = how.verify_checksums;
  ctx.source = input.bytes;
  ctx.open_sibling = input.siblings;
  std::shared_ptr<const FormatParser> parser;
  if (how.format) {
    parser = find_format_parser(*how.format);
    if (!parser)
      throw Error(ErrorCode::unsupported,
                  fmt::format("no parser is registered for format '{}'", to_string(*how.format)),
                  {.source = ctx.source->name()});
  } else {
    parser = detect_format(*ctx.source);
  }
  try {
    Index index = parser->parse(ctx);
    validate_index(index, how.limits);
    return index;
  } catch (Error& e) {
    e.with_source(ctx.source->name());
    throw;
  }
}

void Checkpoint::parse_shard(Shard& shard) {
  ShardInput input = store_->open(shard.object);
  if (options_.shards_in_memory && input.path.empty() && !input.bytes->mapping())
    input.bytes =
        make_memory_source(input.bytes->read(0, input.bytes->size()), input.bytes->name());
  shard.index = parse_shard_input(input, parsing_);
  shard.path = std::move(input.path);
  shard.bytes = std::move(input.bytes);
  // In a folder of several .npy files each file's single array is named after the file
  // (numpy.save names nothing; "arr_0" for every file would collide).
  const std::filesystem::path name = shard.name;
  if (shards_.size() > 1 && name.extension() == ".npy" && shard.index.tensors.size() == 1)
    shard.index.tensors[0].name = name.stem().string();
  for (size_t i = 0; i < shard.index.tensors.size(); ++i)
    shard.by_name.emplace(shard.index.tensors[i].name, i);
}

std::vector<std::string> Checkpoint::shard_names() const {
  std::vector<std::string> names;
  for (const auto& shard : shards_) names.push_back(shard->name);
  return names;
}

Checkpoint::Shard& Checkpoint::parsed_shard(size_t i) {
  Shard& shard = *shards_.at(i);
  if (shard.parsed.load(std::memory_order_acquire)) return shard;
  std::lock_guard lock(shard.parse_mutex);
  if (!shard.parsed.load(std::memory_order_relaxed)) {
    parse_shard(shard);  // a throw leaves the shard unparsed
    shard.parsed.store(true, std::memory_order_release);
  }
  return shard;
}

WeightFormat Checkpoint::format() { return parsed_shard(0).index.format; }

const TensorEntry* Checkpoint::find_in(Shard& shard, const std::string& name) {
  auto it = shard.by_name.find(name);
  return it == shard.by_name.end() ? nullptr : &shard.index.tensors[it->second];
}

std::vector<const TensorEntry*> Checkpoint::entries() {
  std::vector<const TensorEntry*> out;
  std::map<std::string_view, size_t> seen_in;  // tensor -> the shard holding it
  for (size_t i = 0; i < shards_.size(); ++i) {
    Shard& shard = parsed_shard(i);
    if (i > 0 && shard.index.format != shards_[0]->index.format)
      throw Error(ErrorCode::invalid_format,
                  fmt::format("shards mix formats ({} and {})", to_string(shards_[0]->index.format),
                              to_string(shard.index.format)),
                  {.source = shard.name});
    for (const auto& e : shard.index.tensors) {
      if (only_tensor_ && e.name != *only_tensor_) continue;
      auto [it, fresh] = seen_in.emplace(e.name, i);
      if (!fresh)
        throw Error(ErrorCode::invalid_format,
                    fmt::format("tensor appears in two shards ({} and {})",
                                shards_[it->second]->name, shard.name),
                    {.source = description_, .tensor = e.name});
      out.push_back(&e);
    }
  }
  if (only_tensor_ && out.empty()) throw_no_such_tensor(*only_tensor_);
  if (!only_tensor_) require_weight_map_matches(seen_in);
  std::sort(out.begin(), out.end(),
            [](const TensorEntry* a, const TensorEntry* b) { return a->name < b->name; });
  return out;
}

// The whole checkpoint is exactly what its shard index says: every tensor the map names is in
// the shard it names, and no shard holds a tensor the map leaves out. (Naming tensors one by
// one, through entry(), checks only those.)
void Checkpoint::require_weight_map_matches(const std::map<std::string_view, size_t>& seen_in) {
  if (weight_map_.empty()) return;
  for (const auto& [name, shard] : seen_in) {
    const std::string& holder = shards_[shard]->name;
    auto it = weight_map_.find(name);
    if (it == weight_map_.end())
      throw Error(ErrorCode::invalid_format,
                  "a shard holds a tensor that the shard index does not name",
                  {.source = holder, .tensor = std::string(name)});
    if (it->second != shard)
      throw Error(
          ErrorCode::invalid_format,
          fmt::format("the shard index places this tensor in {}", shards_[it->second]->name),
          {.source = holder, .tensor = std::string(name)});
  }
  for (const auto& [name, shard] : weight_map_)
    if (!seen_in.contains(name))
      throw Error(ErrorCode::invalid_format, "the shard index names a shard that lacks this tensor",
                  {.source = shards_[shard]->name, .tensor = name});
}

std::pair<Checkpoint::Shard*, const TensorEntry*> Checkpoint::locate(const std::string& name) {
  if (only_tensor_ && name != *only_tensor_)
    throw Error(ErrorCode::not_found,
                fmt::format("the source is restricted to tensor '{}'", *only_tensor_),
                {.source = description_, .tensor = name});
  if (auto it = weight_map_.find(name); it != weight_map_.end()) {
    Shard& shard = parsed_shard(it->second);
    if (const TensorEntry* e = find_in(shard, name)) return {&shard, e};
    throw Error(ErrorCode::invalid_format, "the shard index names a shard that lacks this tensor",
                {.source = shards_[it->second]->name, .tensor = name});
  }
  for (size_t i = 0; i < shards_.size(); ++i) {
    Shard& shard = parsed_shard(i);
    if (const TensorEntry* e = find_in(shard, name)) return {&shard, e};
  }
  throw_no_such_tensor(name);
}

void Checkpoint::throw_no_such_tensor(const std::string& name) const {
  std::vector<std::string_view> names;
  for (const auto& shard : shards_)
    if (shard->parsed.load(std::memory_order_acquire))
      for (const auto& [known, index] : shard->by_name) names.push_back(known);
  throw Error(ErrorCode::not_found, "no such tensor" + closest_names_text(name, names),
              {.source = description_, .tensor = name});
}

const TensorEntry& Checkpoint::entry(const std::string& name) { return *locate(name).second; }

std::shared_ptr<ByteSource> Checkpoint::shard_bytes(const std::string& name) {
  return locate(name).first->bytes;
}

std::string Checkpoint::default_tensor_name() {
  if (only_tensor_) return *only_tensor_;
  auto all = entries();
  if (all.size() != 1)
    throw Error(
        ErrorCode::invalid_argument,
        fmt::format("the spec names no tensor, but the source holds {} tensors", all.size()),
        {.source = description_});
  return all.front()->name;
}

std::string Checkpoint::extra_json() {
  // One file's metadata is handed on as its parser wrote it: a tree of it (GGUF metadata may
  // be tens of megabytes) would cost 16 bytes and more per element. Only a JSON object is.
  if (shards_.size() == 1 && index_metadata_ == "{}") {
    const std::string& text = parsed_shard(0).index.extra;
    const size_t first = text.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && text[first] == '{' && nlohmann::json::accept(text))
      return text;
    return "{}";
  }
  nlohmann::json merged = nlohmann::json::object();
  for (size_t i = 0; i < shards_.size(); ++i) merge_into(merged, parsed_shard(i).index.extra);
  merge_into(merged, index_metadata_);
  return merged.dump();
}

MetadataValue Checkpoint::extra_values() {
  const uint32_t depth = options_.limits.max_json_depth;
  auto typed = [depth](const Index& index) {
    return index.extra_values.type() != MetadataType::null ? index.extra_values
                                                           : metadata_from_json(index.extra, depth);
  };
  if (shards_.size() == 1 && index_metadata_ == "{}") {
    MetadataValue only = typed(parsed_shard(0).index);
    return only.type() == MetadataType::object ? only : MetadataValue::object({});
  }
  MetadataValue::Members merged;
  std::unordered_set<std::string, StringHash, CountedEqual> keys;
  for (size_t i = 0; i < shards_.size(); ++i)
    merge_into(merged, keys, typed(parsed_shard(i).index));
  merge_into(merged, keys, metadata_from_json(index_metadata_, depth));
  return MetadataValue::object(std::move(merged));
}

std::vector<std::shared_ptr<ByteSource>> Checkpoint::shard_bytes() const {
  std::vector<std::shared_ptr<ByteSource>> out;
  for (const auto& s : shards_)
    if (s->parsed.load(std::memory_order_acquire)) out.push_back(s->bytes);
  return out;
}

std::vector<std::filesystem::path> Checkpoint::files() const {
  std::vector<std::filesystem::path> out;
  for (const auto& s : shards_)
    if (s->parsed.load(std::memory_order_acquire) && !s->path.empty()) out.push_back(s->path);
  return out;
}

}  // namespace ballast
