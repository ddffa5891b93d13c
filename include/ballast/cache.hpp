// Checking ballast's caches: every cached blob hashed against the digest it is named or
// recorded by. Downloads are always checked as they land (size, and sha256 where the source
// states one); each use checks size and the recorded modification time; this is the full
// check of the bytes, for blobs that may have rotted or been changed in place.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace ballast {

struct CachedBlobCheck {
  enum class State { ok, corrupt, unverifiable };
  std::filesystem::path blob;
  std::string cache;  // "objects" (URL and S3 objects) or "hub" (huggingface_hub's layout)
  State state = State::unverifiable;
  std::string expected;  // the digest it is named or recorded by ("sha256:..." / "git-sha1:...")
  std::string actual;    // the digest of its bytes now (empty when unverifiable)
  uint64_t size = 0;
  bool removed = false;
};

struct CacheVerifyOptions {
  // ballast's object cache root; empty: $BALLAST_CACHE, $XDG_CACHE_HOME/ballast, ~/.cache/ballast.
  std::filesystem::path cache_dir;
  // The Hub cache; empty: $HF_HUB_CACHE, $HF_HOME/hub, ~/.cache/huggingface/hub.
  std::filesystem::path hub_cache;
  // Deletes each corrupt blob (and its record), so that its next use downloads it again.
  bool remove_corrupt = false;
};

// Hashes every blob of both caches (a missing cache is skipped). Object-cache blobs are
// checked against the sha256 recorded at download (records written before ballast recorded
// one are unverifiable); Hub blobs against their names: LFS files are named by their sha256,
// the others by their git object id (sha1 of "blob <size>\0" and the bytes).
std::vector<CachedBlobCheck> verify_caches(const CacheVerifyOptions& options = {});

}  // namespace ballast
