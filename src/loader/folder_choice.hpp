// Which weight files of a local folder make up its model, decided as the Hugging Face loaders
// (transformers, diffusers, vLLM) decide, so that a folder never merges unrelated files:
//
//   1. a format family: safetensors, else PyTorch (.bin/.pt/.pth), else GGUF, ONNX, NumPy;
//   2. in the safetensors and PyTorch families, in order:
//      a. the shard index: `model.safetensors.index.json` / `pytorch_model.bin.index.json`
//         (or diffusers' `diffusion_pytorch_model.*`), else the folder's only index;
//      b. the canonical single file: `model.safetensors` / `pytorch_model.bin` (or diffusers');
//      c. one complete shard set named `NAME-00001-of-0000N.safetensors` ...;
//      d. Mistral's `consolidated.safetensors` / a single `consolidated.00.pth`;
//      e. the only file left once LoRA adapters (`adapter_model.*`), variants
//         (`model.fp16.safetensors`) and training state (`optimizer.pt`, ...) are set aside;
//         else the only adapter or variant, when the folder holds nothing else.
//   Several candidates at the same step are an error asking for a file name.
//   3. GGUF: one file or one split set; ONNX: one file; NumPy: every .npy/.npz file.
// Every other weight-like file is reported as ignored, with the reason.
#pragma once

#include <filesystem>
#include <optional>
#include <vector>

#include "ballast/metadata.hpp"
#include "io/os.hpp"

namespace ballast {

struct FolderChoice {
  std::optional<std::filesystem::path> index;  // a shard index (its shards come from it)
  std::vector<std::filesystem::path> files;    // else the weight files, in order
  std::vector<std::filesystem::path> family;   // every file of the chosen family
  std::vector<IgnoredFile> ignored;            // files of other families, and set-asides
};

// Lists the folder through `os`. Throws not_found (naming what was looked for) when the folder
// holds no weight files, and invalid_argument when a step has several candidates.
FolderChoice choose_folder_files(const std::filesystem::path& folder, const Os& os);

}  // namespace ballast
