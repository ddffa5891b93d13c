// Shared body of the parser fuzz targets (see fuzz_support.hpp).
#include "fuzz_support.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "ballast/error.hpp"
#include "ballast/transform.hpp"
#include "core/metadata_json.hpp"
#include "formats/gguf/gguf_split.hpp"
#include "formats/numpy/py_literal.hpp"
#include "formats/validate.hpp"
#include "formats/zip/zip_archive.hpp"
#include "loader/materialize.hpp"
#include "loader/shard_index.hpp"
#include "remote/http_parse.hpp"
#include "remote/ini_file.hpp"
#include "remote/retry_policy.hpp"
#include "remote/url.hpp"
#include "transform/plan.hpp"

namespace ballast::fuzz {
namespace {

// A copy of the fuzzer's input: libFuzzer reuses its buffer after each call.
std::shared_ptr<ByteSource> input_source(const uint8_t* data, size_t size, const char* name) {
  const auto* bytes = reinterpret_cast<const std::byte*>(data);
  return make_memory_source(std::vector<std::byte>(bytes, bytes + size), name);
}

// A broken invariant: a bug even though nothing crashed. abort() makes libFuzzer keep the input.
void require(bool ok) {
  if (!ok) std::abort();
}

// Whether a relative path could name something outside its folder.
bool escapes_folder(std::string_view relative) {
  if (relative.empty() || relative.front() == '/' || relative.front() == '\\') return true;
  if (relative.find('\0') != std::string_view::npos) return true;
  for (size_t start = 0; start <= relative.size();) {
    size_t end = std::min(relative.find_first_of("/\\", start), relative.size());
    if (relative.substr(start, end - start) == "..") return true;
    start = end + 1;
  }
  return false;
}

// The folder an ONNX model's external data comes from: every file 4096 bytes. Whatever the
// parser asks for must be a path that cannot leave the folder.
std::shared_ptr<ByteSource> open_fake_sibling(std::string_view relative) {
  require(!escapes_folder(relative));
  return make_memory_source(std::vector<std::byte>(4096, std::byte{0x5a}), std::string(relative));
}

std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
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
  limits.max_pickle_materialized_bytes = 256 << 20;
  return limits;
}

void parse_and_load(const FormatParser& parser, const uint8_t* data, size_t size) {
  ParseContext ctx{.source = input_source(data, size, "fuzz-input"),
                   .limits = fuzz_limits(),
                   .open_sibling = open_fake_sibling};
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
      std::vector<std::byte> out(std::min<uint64_t>(source->size(), 4 << 20));
      source->read_at(0, out);  // past 1 MiB a deflated member inflates straight into `out`
      source->read_at(0, std::span(out).first(std::min<size_t>(out.size(), 4096)));
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

void parse_index_json(const uint8_t* data, size_t size) {
  try {
    ShardIndex index = parse_shard_index(std::span(reinterpret_cast<const std::byte*>(data), size),
                                         "fuzz", fuzz_limits());
    for (const auto& [tensor, shard] : index.weight_map) require(shard < index.shards.size());
    // The typed metadata get_metadata makes of it, and the whole text as typed values.
    require(metadata_from_json(index.metadata, fuzz_limits().max_json_depth).type() ==
            MetadataType::object);
    (void)metadata_from_json(std::string_view(reinterpret_cast<const char*>(data), size),
                             fuzz_limits().max_json_depth);
    for (const auto& name : index.shards) {
      try {
        require(!escapes_folder(confined_relative_path(name, "fuzz")));
      } catch (const Error&) {
      }
    }
  } catch (const Error&) {
  }
}

void parse_http_response(const uint8_t* data, size_t size) {
  std::string_view text = as_text(data, size);
  while (!text.empty()) {
    const size_t end = std::min(text.find('\n'), text.size() - 1);
    const std::string_view line = text.substr(0, end + 1);
    text.remove_prefix(end + 1);
    if (line.starts_with("HTTP/")) {
      const long status = parse_http_status_line(line);
      require(status >= 0 && status <= 999);
      continue;
    }
    auto header = parse_http_header_line(line);
    if (!header) continue;
    const std::string& value = header->second;
    if (auto range = parse_content_range(value)) {
      if (range->first > range->last)
        require(range->total.has_value());
      else if (range->total)
        require(range->last < *range->total);
    }
    (void)parse_http_u64(value);
    if (auto seconds = parse_retry_after(value)) require(*seconds >= 0);
  }
}

void parse_python_literal(const uint8_t* data, size_t size) {
  try {
    (void)parse_py_literal(as_text(data, size), fuzz_limits().max_json_depth);
  } catch (const PyLiteralError&) {
  }
}

void parse_split_name(const uint8_t* data, size_t size) {
  const std::string_view name = as_text(data, size);
  auto split = parse_gguf_split_name(name);
  auto siblings = gguf_split_siblings(name);
  require(split.has_value() == !siblings.empty());
  if (split)
    require(split->index >= 1 && split->index <= split->count && siblings.size() == split->count);
}

void parse_aws_ini(const uint8_t* data, size_t size) {
  const IniFile ini = parse_ini(as_text(data, size));
  uint64_t stored = 0;
  for (const auto& [section, keys] : ini) {
    stored += section.size();
    for (const auto& [key, value] : keys) {
      // Keys are bounded (a nested key is "parent.key"), trimmed and single-line.
      require(!key.empty() && key.size() <= 2 * kMaxIniKeyBytes + 1);
      require(key.find('\n') == std::string::npos && value.find('\n') == std::string::npos);
      require(key.front() != ' ' && key.back() != ' ' && (value.empty() || value.back() != ' '));
      stored += key.size() + value.size();
    }
  }
  // No amplification beyond the bounded parent prefix on each line.
  require(stored <= (size + 1) * (2 * kMaxIniKeyBytes + 2));
}

void run_target(const std::string& target, const uint8_t* data, size_t size) {
  if (target == "zip") return open_zip(data, size);
  if (target == "transform_syntax") return plan_transform_text(data, size);
  if (target == "shard_index") return parse_index_json(data, size);
  if (target == "http_response") return parse_http_response(data, size);
  if (target == "py_literal") return parse_python_literal(data, size);
  if (target == "gguf_split_name") return parse_split_name(data, size);
  if (target == "aws_ini") return parse_aws_ini(data, size);
  parse_and_load(*find_format_parser(parse_format(target)), data, size);
}

}  // namespace ballast::fuzz
