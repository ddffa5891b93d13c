// HubSettings: where the Hugging Face Hub is and how to reach it, from the same environment
// variables huggingface_hub reads: HF_ENDPOINT, HF_TOKEN (else the file $HF_HOME/token),
// HF_HOME, HF_HUB_CACHE and HF_HUB_OFFLINE.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace ballast {

struct HubSettings {
  std::string endpoint = "https://huggingface.co";  // no trailing slash
  std::string token;                                // empty: anonymous
  std::filesystem::path cache_dir;                  // the hub cache (models--org--name/...)
  bool offline = false;
};

// The settings for a source; `cache_dir` (the source's own) wins over the environment.
HubSettings hub_settings_from_env(const std::optional<std::filesystem::path>& cache_dir);

}  // namespace ballast
