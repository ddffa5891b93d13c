// Shared body of the parser fuzz targets (see fuzz_support.hpp).
#include "fuzz_support.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "ballast/error.hpp"
#include "ballast/transform.hpp"
#include "formats/validate.hpp"
#include "formats/zip/zip_archive.hpp"
#include "loader/materialize.hpp"
#include "transform/plan.hpp"

namespace ballast::fuzz {
namespace {

// A copy of the fuzzer's input: libFuzzer reuses its buffer after each call.
std::shared_ptr<ByteSource> input_source(const uint8_t* data, size_t size, const char* name) {
  const auto* bytes = reinterpret_cast<const std::byte*>(data);
  return make_memory_source(std::vector<std::byte>(bytes, bytes + size), name);
}

}  // namespace

Limits fuzz_limits() {
  Limits limits;
  limits.max_header_bytes = 1 << 20;
  limits.max_tensors = 4096;
  limits.max_tensor_bytes = 64 << 20;
  limits.max_metadata_entries = 100'000;
  limits.max_string_length = 1 << 20;
  limits.max_inflated_bytes = 64 << 20;
  limits.max_pickle_bytes = 1 << 20;
  limits.max_pickle_memo = 100'000;
  limits.max_pickle_stack = 100'000;
  return limits;
}

void parse_and_load(const FormatParser& parser, const uint8_t* data, size_t size) {
  ParseContext ctx{.source = input_source(data, size, "fuzz-input"), .limits = fuzz_limits()};
  try {
    Index index = parser.parse(ctx);
    validate_index(index, ctx.limits);
    MaterializeOptions options{
        .read_mode = ReadMode::read, .alignment = 64, .host_factory = cpu_tensor_factory().get()};
    for (const TensorEntry& entry : index.tensors) {
      if (entry.nbytes() > ctx.limits.max_tensor_bytes) continue;
      materialize(plan_load(entry, {}), entry.name, options);
    }
  } catch (const Error&) {
    // A clean refusal: what hostile input must get.
  }
}

void open_zip(const uint8_t* data, size_t size) {
  try {
    auto archive = ZipArchive::open(input_source(data, size, "fuzz.zip"), fuzz_limits());
    for (const auto& member : archive.members()) {
      auto source = archive.member_source(member);
      std::vector<std::byte> out(std::min<uint64_t>(source->size(), 1 << 20));
      source->read_at(0, out);
    }
  } catch (const Error&) {
  }
}

void plan_transform_text(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  TensorEntry entry;
  entry.name = "t";
  entry.dtype = DType::f32;
  entry.shape = {4, 6, 8};
  entry.data = make_memory_source(std::vector<std::byte>(4 * 6 * 8 * 4), "t");
  try {
    auto steps = parse_transformations(text);
    for (const auto& step : steps) (void)to_string(step);
    (void)plan_load(entry, steps);
  } catch (const Error&) {
  }
}

void run_target(const std::string& target, const uint8_t* data, size_t size) {
  if (target == "zip") return open_zip(data, size);
  if (target == "transform_syntax") return plan_transform_text(data, size);
  parse_and_load(*find_format_parser(parse_format(target)), data, size);
}

}  // namespace ballast::fuzz
