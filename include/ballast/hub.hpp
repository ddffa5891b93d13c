// Downloading from the Hugging Face Hub into its cache (the one huggingface_hub uses), as
// `hf download` does: a whole repository's snapshot (configs, tokenizer, weights; filtered by
// allow/ignore globs as snapshot_download's), one file, or the .gguf file(s) a quantization tag
// names (hf://org/repo-GGUF:Q4_K_M, as llama.cpp's -hf). Loading needs none of this: loads
// download what they read themselves.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "ballast/config.hpp"
#include "ballast/source.hpp"

namespace ballast {

struct HubDownloadOptions {
  // snapshot_download's allow_patterns / ignore_patterns (fnmatch, case-sensitive, '*' crosses
  // '/', "dir/" means everything under dir): a file is fetched when it matches one `include`
  // pattern (any file when there are none) and no `exclude` pattern. Whole repositories only.
  std::vector<std::string> include;
  std::vector<std::string> exclude;
};

struct HubDownload {
  std::filesystem::path snapshot;  // <hub cache>/models--org--name/snapshots/<commit>
  // What to hand on: the snapshot folder for a whole repository, else the file (for a GGUF
  // split set its first part; the others lie beside it).
  std::filesystem::path path;
  std::string commit;
  std::vector<std::string> files;  // the repository paths now in the snapshot, in order
  uint64_t bytes = 0;              // their total size
  bool from_cache = false;         // offline or the Hub unreachable: listed from the cache
};

// Fetches an hf:// source into the Hub cache (HuggingFaceSource::cache_dir, else HF_HUB_CACHE
// and the other HF_* variables) and returns where it is. Files already cached are not
// downloaded again. Weight files that can be checked by ranges (safetensors, GGUF) are probed
// first as a load would (a header the loader refuses is never downloaded); every other file
// (JSON, text, tokenizer.model, ...) is fetched as a plain file. `config` gives the HTTP
// settings and on_download_progress; it must have caching on. Errors: not_found (repository,
// revision or file missing; nothing matches the patterns or the tag; offline and not cached),
// auth (gated or private: set HF_TOKEN or run `hf auth login`), network, integrity.
HubDownload download_from_hub(const WeightSource& source, const WeightLoaderConfig& config = {},
                              const HubDownloadOptions& options = {});

}  // namespace ballast
