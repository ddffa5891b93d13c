// `ballast inspect SOURCE [--json]`: the tensors, totals and metadata of a checkpoint.
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_common.hpp"
#include "commands.hpp"

namespace ballast::cli {
namespace {

struct InspectOptions {
  SourceOptions source;
  bool json = false;
};

// Long arrays are summarised in the table; --json prints everything.
std::string summarize(const nlohmann::json& value) {
  constexpr size_t kMaxItems = 8;
  if (value.is_array() && value.size() > kMaxItems) {
    std::string head;
    for (size_t i = 0; i < 3; ++i) head += summarize(value[i]) + ", ";
    return fmt::format("[{} items: {}...]", value.size(), head);
  }
  std::string text = value.is_string() ? value.get<std::string>() : json_text(value, -1);
  constexpr size_t kMaxChars = 120;
  if (text.size() > kMaxChars)
    text = text.substr(0, kMaxChars) + fmt::format("... ({} chars)", text.size());
  return text;
}

void print_table(const std::string& source, const WeightMetadata& meta,
                 const nlohmann::json& extra) {
  size_t name_width = 4;
  for (const auto& [name, info] : meta.tensors) name_width = std::max(name_width, name.size());
  fmt::print("{}  ({})\n\n", source, to_string(meta.format));
  fmt::print("{:<{}}  {:<8}  {:<20}  {:>12}\n", "name", name_width, "dtype", "shape", "size");
  for (const auto& [name, info] : meta.tensors)
    fmt::print("{:<{}}  {:<8}  {:<20}  {:>12}\n", name, name_width, dtype_name(info.dtype),
               shape_text(info.shape), human_bytes(info.nbytes));
  fmt::print("\n{} tensors, {} ({} bytes)\n", meta.tensors.size(),
             human_bytes(meta.total_size_bytes), meta.total_size_bytes);
  if (!extra.empty()) {
    fmt::print("\nmetadata:\n");
    for (auto& [key, value] : extra.items()) fmt::print("  {}: {}\n", key, summarize(value));
  }
}

void run(const InspectOptions& options) {
  auto loader = create_weight_loader(loader_config(options.source));
  WeightMetadata meta = loader->get_metadata(parse_source(options.source));
  nlohmann::json extra = nlohmann::json::parse(meta.extra);
  if (!options.json) return print_table(source_text(options.source), meta, extra);
  nlohmann::json out;
  out["source"] = source_text(options.source);
  out["format"] = to_string(meta.format);
  out["total_size_bytes"] = meta.total_size_bytes;
  out["tensors"] = nlohmann::json::array();
  for (const auto& [name, info] : meta.tensors)
    out["tensors"].push_back({{"name", name},
                              {"dtype", dtype_name(info.dtype)},
                              {"shape", info.shape},
                              {"nbytes", info.nbytes}});
  out["metadata"] = extra;
  std::cout << json_text(out) << "\n";
}

}  // namespace

Runner add_inspect_command(CLI::App& app) {
  auto options = std::make_shared<InspectOptions>();
  auto* cmd = app.add_subcommand("inspect", "List a checkpoint's tensors, totals and metadata");
  add_source_options(*cmd, options->source, true);
  cmd->add_flag("--json", options->json, "print one JSON object");
  return [options] { run(*options); };
}

}  // namespace ballast::cli
