// `ballast inspect SOURCE [--json]`: the tensors, totals and metadata of a checkpoint.
//
// Output is written as it is produced, never as one JSON tree: a checkpoint's metadata can
// hold arrays of millions of elements (GGUF tokenizer tables) and its index hundreds of
// thousands of tensors, and a tree of those costs tens of times the file's size (issue 30).
// --json splices the library's metadata text in as it is; the table parses it keeping only
// what it shows.
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_common.hpp"
#include "commands.hpp"
#include "shard_plan.hpp"
#include "wording.hpp"

namespace ballast::cli {
namespace {

struct InspectOptions {
  SourceOptions source;
  bool json = false;
  std::string shard;  // RANK/WORLD[:DIM]: print the tensor-parallel read plan instead
};

constexpr size_t kMaxItems = 8;    // arrays longer than this are summarised in the table
constexpr size_t kShownItems = 3;  // ... by their first few items
constexpr size_t kMaxChars = 120;  // longer values are cut
constexpr char kItemsKey[] =
    "\x1f"
    "items";  // marks an array summarised while parsing

std::string summarize(const nlohmann::json& value) {
  if (value.is_object() && value.contains(kItemsKey)) {
    std::string head;
    for (const auto& item : value["head"]) head += summarize(item) + ", ";
    return fmt::format("[{} items: {}...]", value[kItemsKey].get<uint64_t>(), head);
  }
  std::string text = value.is_string() ? value.get<std::string>() : json_text(value, -1);
  if (text.size() > kMaxChars)
    text = text.substr(0, kMaxChars) + fmt::format("... ({} chars)", text.size());
  return text;
}

// Parses metadata JSON keeping only what the table shows: the elements of an array past
// kMaxItems are dropped as they are read (only counted), and an array that had more becomes
// {kItemsKey: count, "head": first kShownItems}. Memory stays a few values per array. A SAX
// handler of its own: nlohmann's callback parser scans an object's members each time one of
// its objects ends (quadratic in the objects of an object).
class TableSax {
 public:
  bool null() { return place(nullptr); }
  bool boolean(bool v) { return place(v); }
  bool number_integer(nlohmann::json::number_integer_t v) { return place(v); }
  bool number_unsigned(nlohmann::json::number_unsigned_t v) { return place(v); }
  bool number_float(nlohmann::json::number_float_t v, const std::string&) { return place(v); }
  bool string(std::string& v) { return place(std::move(v)); }
  bool binary(nlohmann::json::binary_t&) { return place(nullptr); }
  bool start_object(std::size_t) { return open(nlohmann::json::object()); }
  bool start_array(std::size_t) { return open(nlohmann::json::array()); }
  bool key(std::string& name) {
    if (skipped_depth_ == 0) open_.back().key = std::move(name);
    return true;
  }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::json::exception& e) {
    throw std::runtime_error(e.what());
  }

  nlohmann::json take() { return std::move(root_); }

 private:
  struct Frame {
    nlohmann::json* node;
    uint64_t count = 0;  // an array's elements, kept or not
    std::string key;     // an object's key whose value comes next
  };

  // Puts `v` where the next value goes; null when an array past kMaxItems drops it.
  nlohmann::json* put(nlohmann::json v) {
    if (open_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    Frame& top = open_.back();
    if (top.node->is_object()) {
      nlohmann::json& slot = (*top.node)[top.key];
      slot = std::move(v);
      return &slot;
    }
    if (++top.count > kMaxItems) return nullptr;
    top.node->push_back(std::move(v));
    return &top.node->back();
  }

  bool place(nlohmann::json v) {
    if (skipped_depth_ == 0) put(std::move(v));
    return true;
  }

  bool open(nlohmann::json empty) {
    if (skipped_depth_ > 0) {
      ++skipped_depth_;
      return true;
    }
    nlohmann::json* node = put(std::move(empty));
    if (!node) {
      skipped_depth_ = 1;
      return true;
    }
    open_.push_back({node});
    return true;
  }

  bool close() {
    if (skipped_depth_ > 0) {
      --skipped_depth_;
      return true;
    }
    Frame frame = std::move(open_.back());
    open_.pop_back();
    if (frame.node->is_array() && frame.count > kMaxItems) {
      nlohmann::json head = nlohmann::json::array();
      for (size_t i = 0; i < kShownItems; ++i) head.push_back(std::move((*frame.node)[i]));
      *frame.node = {{kItemsKey, frame.count}, {"head", std::move(head)}};
    }
    return true;
  }

  nlohmann::json root_;
  std::vector<Frame> open_;
  uint32_t skipped_depth_ = 0;  // containers open inside a dropped element
};

nlohmann::json parse_for_table(const std::string& text) {
  TableSax sax;
  nlohmann::json::sax_parse(text, &sax);
  return sax.take();
}

// The files a folder or shard index resolved to, and the folder's files left out (and why).
void print_files(const WeightMetadata& meta) {
  if (meta.files.size() > 1 || !meta.ignored_files.empty()) {
    fmt::print("\nfiles:\n");
    for (const auto& file : meta.files) fmt::print("  {}\n", file);
  }
  if (!meta.ignored_files.empty()) fmt::print("\nignored:\n");
  for (const auto& file : meta.ignored_files) fmt::print("  {}  ({})\n", file.name, file.reason);
}

void print_table(const std::string& source, const WeightMetadata& meta) {
  size_t name_width = 4;
  for (const auto& [name, info] : meta.tensors) name_width = std::max(name_width, name.size());
  fmt::print("{}  ({})\n\n", source, to_string(meta.format));
  fmt::print("{:<{}}  {:<8}  {:<20}  {:>12}\n", "name", name_width, "dtype", "shape", "size");
  std::vector<std::string> names;
  for (const auto& [name, info] : meta.tensors) names.push_back(name);
  for (const auto& name : naturally_sorted(std::move(names))) {
    const TensorInfo& info = meta.tensors.at(name);
    fmt::print("{:<{}}  {:<8}  {:<20}  {:>12}\n", name, name_width, dtype_name(info.dtype),
               shape_text(info.shape), human_bytes(info.nbytes));
  }
  fmt::print("\n{}, {} ({} bytes)\n", counted(meta.tensors.size(), "tensor"),
             human_bytes(meta.total_size_bytes), meta.total_size_bytes);
  print_files(meta);
  const nlohmann::json extra = parse_for_table(meta.extra);
  if (!extra.empty()) {
    fmt::print("\nmetadata:\n");
    for (const auto& [key, value] : extra.items()) fmt::print("  {}: {}\n", key, summarize(value));
  }
}

// One JSON object, written field by field; "metadata" is the library's JSON text as it is.
void print_json(const std::string& source, const WeightMetadata& meta) {
  std::string out = fmt::format("{{\n  \"source\": {},\n  \"format\": {},\n", json_text(source, -1),
                                json_text(to_string(meta.format), -1));
  out += fmt::format("  \"total_size_bytes\": {},\n  \"tensors\": [", meta.total_size_bytes);
  const char* separator = "\n    ";
  for (const auto& [name, info] : meta.tensors) {
    out += separator;
    out += json_text({{"name", name},
                      {"dtype", dtype_name(info.dtype)},
                      {"shape", info.shape},
                      {"nbytes", info.nbytes}},
                     -1);
    separator = ",\n    ";
  }
  out += meta.tensors.empty() ? "],\n" : "\n  ],\n";
  nlohmann::json ignored = nlohmann::json::array();
  for (const auto& file : meta.ignored_files)
    ignored.push_back({{"name", file.name}, {"reason", file.reason}});
  out += fmt::format("  \"files\": {},\n  \"ignored_files\": {},\n", json_text(meta.files, -1),
                     json_text(ignored, -1));
  std::cout << out << "  \"metadata\": " << meta.extra << "\n}\n";
}

void run(const InspectOptions& options) {
  auto loader = make_weight_loader(loader_config(options.source));
  const WeightMetadata meta = loader->get_metadata(parse_source(options.source));
  note_metadata(source_text(options.source), meta);
  if (!options.shard.empty())
    return print_shard_plan(source_text(options.source), meta, parse_shard_option(options.shard),
                            options.json);
  if (options.json) return print_json(source_text(options.source), meta);
  print_table(source_text(options.source), meta);
}

}  // namespace

Runner add_inspect_command(CLI::App& app) {
  auto options = std::make_shared<InspectOptions>();
  auto* cmd = app.add_subcommand("inspect", "List a checkpoint's tensors, totals and metadata");
  add_source_options(*cmd, options->source, true);
  cmd->add_flag("--json", options->json, "print one JSON object");
  cmd->add_option("--shard", options->shard,
                  "RANK/WORLD[:DIM] (RANK may be all): the bytes each tensor-parallel rank reads "
                  "with shard:RANK/WORLD:DIM on every tensor");
  return [options] { run(*options); };
}

}  // namespace ballast::cli
