// WeightMetadata: what a checkpoint holds, learned from its headers without reading tensor data.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ballast/dtype.hpp"
#include "ballast/format.hpp"
#include "ballast/metadata_value.hpp"
#include "ballast/tensor.hpp"

namespace ballast {

struct TensorInfo {
  DType dtype = DType::u8;
  Shape shape;          // row-major, outermost first (GGUF's ne[] reversed)
  uint64_t nbytes = 0;  // logical contiguous size in the stored dtype
};

// A weight-like file in a checkpoint's folder that is not part of the checkpoint, and why
// (a LoRA adapter, a variant, another format, not named in the shard index...).
struct IgnoredFile {
  std::string name;  // the file's name within the folder
  std::string reason;
};

struct WeightMetadata {
  WeightFormat format;
  std::map<std::string, TensorInfo> tensors;  // sorted by name
  uint64_t total_size_bytes = 0;              // sum of tensors' nbytes
  std::set<DType> dtypes;
  // A JSON object, as text: format-specific metadata (safetensors `__metadata__`, GGUF KV
  // pairs, ONNX metadata_props, PyTorch non-tensor leaves). "{}" when there is none.
  std::string extra = "{}";
  // The same metadata as typed values: an object whose values keep their format's types
  // (GGUF's u32 stays u32, an f32 array stays f32, tokenizer strings stay a string array).
  // `extra` is its JSON rendering (to_json), as each parser wrote it.
  MetadataValue values = MetadataValue::object({});
  // The files that make up the checkpoint, in shard order (paths, or redacted URLs), and, for a
  // folder, the weight-like files it holds but does not use (see docs/design.md, "Folders").
  std::vector<std::string> files;
  std::vector<IgnoredFile> ignored_files;
};

}  // namespace ballast
