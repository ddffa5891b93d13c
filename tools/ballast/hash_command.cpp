// `ballast hash SOURCE [--json] [--tensor NAME]... [--dtype D] [--transform LIST]`: the sha256
// of each tensor's logical bytes (contiguous, row-major, little-endian), after the optional
// cast and transformations. A quantize step prints every part of the bundle as
// "<tensor>.<part>".
#include <deque>
#include <future>
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_common.hpp"
#include "commands.hpp"
#include "console.hpp"

namespace ballast::cli {
namespace {

struct HashOptions {
  SourceOptions source;
  std::vector<std::string> tensors;
  std::string cast;
  std::string transform;
  bool json = false;
};

void run(const HashOptions& options) {
  auto loader = make_weight_loader(loader_config(options.source));
  WeightSource source = parse_source(options.source);
  const bool raw = source.format && source.format->kind == WeightFormat::Kind::raw;
  WeightMetadata meta = loader->get_metadata(source);
  note_metadata(source_text(options.source), meta);
  std::vector<std::string> names;
  for (const auto& [name, info] : meta.tensors) names.push_back(name);
  names = select_tensors(names, options.tensors);
  download_first_when_reading_all(*loader, source, options.source, names.size(),
                                  meta.tensors.size());

  // Tensors are loaded a few at a time and dropped once hashed, so hashing a checkpoint
  // needs memory for a handful of tensors, not the whole model.
  const size_t window = 4;
  std::deque<std::future<TensorRef>> in_flight;
  size_t next = 0;
  nlohmann::json out = {{"tensors", nlohmann::json::object()}};
  while (next < names.size() || !in_flight.empty()) {
    while (next < names.size() && in_flight.size() < window)
      in_flight.push_back(loader->load_tensor_async(
          TensorSpec{.name = names[next++],
                     .source = source,
                     .transformations = load_steps(options.source, options.transform, raw)}));
    TensorRef loaded = in_flight.front().get();
    in_flight.pop_front();
    for (const TensorRef& t : tensors_of(loaded)) {
      std::string digest = sha256_hex(*t);
      if (options.json)
        out["tensors"][t->name()] = {
            {"dtype", dtype_name(t->dtype())}, {"shape", t->shape()}, {"sha256", digest}};
      else
        Console::instance().result(fmt::format("{}  {}  {}  {}", digest, t->name(),
                                               dtype_name(t->dtype()), shape_text(t->shape())));
    }
  }
  if (options.json) std::cout << json_text(out) << "\n";
}

}  // namespace

Runner add_hash_command(CLI::App& app) {
  auto options = std::make_shared<HashOptions>();
  auto* cmd = app.add_subcommand("hash", "Print the sha256 of each tensor's logical contents");
  add_source_options(*cmd, options->source, false);
  add_dtype_option(*cmd, options->source);
  add_tensor_option(*cmd, options->tensors);
  cmd->add_option("--transform", options->transform,
                  "comma-separated steps, e.g. slice:0:0:2,transpose:0:1,cast:f16");
  cmd->add_flag("--json", options->json, "print one JSON object");
  return [options] { run(*options); };
}

}  // namespace ballast::cli
