// `ballast convert SOURCE OUT.safetensors [--tensor PATTERN]... [--dtype D] [--transform LIST]`:
// loads the selected tensors of any format with the transformations applied and writes them
// as one safetensors file (quantized bundles as "<tensor>.<part>"), recording the source and
// the steps in __metadata__. The file appears atomically, complete or not at all.
#include <deque>
#include <filesystem>
#include <future>
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli_common.hpp"
#include "commands.hpp"
#include "console.hpp"
#include "safetensors_writer.hpp"
#include "wording.hpp"

namespace ballast::cli {
namespace {

struct ConvertOptions {
  SourceOptions source;
  std::string output;
  std::vector<std::string> tensors;
  std::string transform;
};

std::string steps_text(const std::vector<Transformation>& steps) {
  std::vector<std::string> parts;
  for (const auto& s : steps) parts.push_back(to_string(s));
  return fmt::format("{}", fmt::join(parts, ","));
}

// convert writes its output by renaming a finished scratch file over OUT: refuse an OUT that is
// one of the files being read, before anything is loaded.
void refuse_overwriting_input(const std::string& output, const WeightMetadata& meta) {
  for (const auto& file : meta.files) {
    std::error_code ec;
    if (std::filesystem::equivalent(output, file, ec))
      throw Error(
          ErrorCode::invalid_argument,
          fmt::format("convert would overwrite its input '{}': write to another file", file));
  }
}

void run(const ConvertOptions& options) {
  auto loader = make_weight_loader(loader_config(options.source));
  WeightSource source = parse_source(options.source);
  const bool raw = source.format && source.format->kind == WeightFormat::Kind::raw;
  const auto steps = load_steps(options.source, options.transform, raw);
  WeightMetadata meta = loader->get_metadata(source);
  note_metadata(source_text(options.source), meta);
  refuse_overwriting_input(options.output, meta);
  std::vector<std::string> names;
  for (const auto& [name, info] : meta.tensors) names.push_back(name);
  names = select_tensors(names, options.tensors);
  download_first_when_reading_all(*loader, source, options.source, names.size(),
                                  meta.tensors.size());

  if (!options.output.ends_with(".safetensors"))
    Console::instance().warn(
        fmt::format("'{}' does not end in .safetensors, but convert writes a safetensors file",
                    options.output));
  SafetensorsWriter writer(options.output);
  // A few tensors in flight at a time, each dropped once its bytes are in the scratch file.
  const size_t window = 4;
  std::deque<std::future<TensorRef>> in_flight;
  size_t next = 0, written = 0;
  uint64_t bytes = 0;
  while (next < names.size() || !in_flight.empty()) {
    while (next < names.size() && in_flight.size() < window)
      in_flight.push_back(loader->load_tensor_async(
          TensorSpec{.name = names[next++], .source = source, .transformations = steps}));
    TensorRef loaded = in_flight.front().get();
    in_flight.pop_front();
    for (const TensorRef& t : tensors_of(loaded)) {
      writer.add(*t);
      ++written;
      bytes += t->nbytes();
    }
  }
  writer.finish({{"format", "pt"},
                 {"converted_by", "ballast"},
                 {"source", source_text(options.source)},
                 {"source_format", to_string(meta.format)},
                 {"transformations", steps_text(steps)}});
  fmt::print("wrote {}, {} to {}\n", counted(written, "tensor"), human_bytes(bytes),
             options.output);
}

}  // namespace

Runner add_convert_command(CLI::App& app) {
  auto options = std::make_shared<ConvertOptions>();
  auto* cmd = app.add_subcommand("convert", "Write tensors, transformed, as a safetensors file");
  add_source_options(*cmd, options->source, false);
  cmd->add_option("OUT", options->output, "the safetensors file to write")->required();
  add_dtype_option(*cmd, options->source);
  add_tensor_option(*cmd, options->tensors);
  cmd->add_option("--transform", options->transform,
                  "comma-separated steps applied to every tensor, e.g. cast:f16,quantize:int8");
  return [options] { run(*options); };
}

}  // namespace ballast::cli
