// WeightSource: where a checkpoint lives (a local path, a URL, the Hugging Face Hub, bytes in
// memory, or an S3-compatible bucket), plus optional hints about its format.
//
// A local path may name one file, a directory holding a checkpoint (possibly sharded), or a
// `*.index.json` shard index. Sources are plain values: cheap to copy, safe to share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "ballast/dtype.hpp"
#include "ballast/format.hpp"
#include "ballast/tensor.hpp"

namespace ballast {

struct FileSource {
  std::filesystem::path path;
  std::optional<std::string> tensor_name;  // restrict the source to this one tensor
};

struct UrlSource {
  std::string url;
  std::map<std::string, std::string> headers;
};

struct HuggingFaceSource {
  std::string repo_id;   // "org/name"
  std::string filename;  // path inside the repo; empty = the whole repo's weights
  std::optional<std::string> revision;
  std::optional<std::filesystem::path> cache_dir;
  // A GGUF quantization tag (hf://org/repo:Q4_K_M, as llama.cpp's -hf): the repo's .gguf file
  // (or split set) whose name holds it, case-insensitively. Empty: none. Used without filename.
  std::string quant_tag;
};

struct MemorySource {
  std::span<const std::byte> bytes;
  std::shared_ptr<const void> owner;   // keeps `bytes` alive; may be null if the caller does
  std::optional<WeightFormat> format;  // detected from the bytes when empty

  // Copies `bytes` into memory that the source owns.
  static MemorySource copy_of(std::span<const std::byte> bytes,
                              std::optional<WeightFormat> format = std::nullopt);
};

struct S3Source {
  std::string bucket;
  std::string key;
  std::optional<std::string> region;
  std::optional<std::string> endpoint;
};

// How a raw (headerless) file is laid out: dtype, row-major shape and a byte offset.
struct RawLayout {
  DType dtype = DType::u8;
  Shape shape;
  uint64_t offset = 0;
};

struct WeightSource {
  std::variant<FileSource, UrlSource, HuggingFaceSource, MemorySource, S3Source> location;
  std::optional<WeightFormat> format;   // force a format instead of detecting it
  std::optional<RawLayout> raw_layout;  // for format raw

  static WeightSource file(std::filesystem::path path,
                           std::optional<std::string> tensor_name = std::nullopt);
  static WeightSource url(std::string url, std::map<std::string, std::string> headers = {});
  static WeightSource hugging_face(std::string repo_id, std::string filename,
                                   std::optional<std::string> revision = std::nullopt,
                                   std::optional<std::filesystem::path> cache_dir = std::nullopt);
  static WeightSource memory(MemorySource memory);
  static WeightSource s3(std::string bucket, std::string key,
                         std::optional<std::string> region = std::nullopt,
                         std::optional<std::string> endpoint = std::nullopt);
};

// A readable description ("/models/x.safetensors", "https://...", "hf://org/repo@rev/file",
// "memory(1234 bytes)", "s3://bucket/key") used in errors and the CLI.
std::string describe(const WeightSource& source);

}  // namespace ballast
