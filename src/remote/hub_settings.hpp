// HubSettings: where the Hugging Face Hub is and how to reach it, from the environment variables
// huggingface_hub reads, with the same meanings, precedence and fallbacks: HF_ENDPOINT;
// HF_TOKEN (else HUGGING_FACE_HUB_TOKEN, else the file HF_TOKEN_PATH or $HF_HOME/token); HF_HOME
// (else $XDG_CACHE_HOME/huggingface, else ~/.cache/huggingface); HF_HUB_CACHE (else
// HUGGINGFACE_HUB_CACHE, else $HF_HOME/hub); HF_HUB_OFFLINE (else TRANSFORMERS_OFFLINE: 1, ON,
// YES or TRUE in any case). Paths have "~" and $VAR / ${VAR} expanded, as Python's
// os.path.expanduser and os.path.expandvars do.
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

// The settings for a source; `cache_dir` (the source's own) wins over the environment. A token
// holding a control character is Error(auth) naming where it came from, never the token.
HubSettings hub_settings_from_env(const std::optional<std::filesystem::path>& cache_dir);

// The hub cache alone (HF_HUB_CACHE, ...), for what needs no token (`ballast cache verify`).
std::filesystem::path hub_cache_dir_from_env();

}  // namespace ballast
