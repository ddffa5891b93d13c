// The files of a Hub repository at one revision, as huggingface_hub's snapshot_download needs
// them: online from the model info API (GET {endpoint}/api/models/{repo}/revision/{revision},
// its "sha" and "siblings"), offline or when the Hub cannot answer from the cached
// snapshots/<commit>/ folder.
#pragma once

#include <string>
#include <vector>

#include "remote/hub_client.hpp"

namespace ballast {

struct HubRepoFiles {
  std::string commit;
  std::vector<std::string> paths;  // relative paths in the repo, sorted
  bool from_cache = false;         // listed from the cached snapshot, not by the Hub
};

// Lists `revision` of the client's repository. Online, a network or auth failure falls back to
// the cached snapshot of the revision when there is one (as snapshot_download does); a missing
// repository or revision never does. Offline (HF_HUB_OFFLINE) only the cache is read; a
// revision not cached is not_found, naming what to run to download it. Every path is checked
// (relative, no "..") and the listing is bounded.
HubRepoFiles list_hub_files(const HubClient& hub, const std::string& revision);

// The commit of `revision` and the .gguf file(s) the quantization tag names there
// (hub_gguf_tag.hpp), as `paths`. The caller records a listing by the Hub in refs/<revision>
// (with caching on) once it holds the files, so the tag resolves offline later.
HubRepoFiles list_hub_gguf_files(const HubClient& hub, const std::string& revision,
                                 std::string_view tag);

}  // namespace ballast
