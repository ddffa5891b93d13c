// What a Hugging Face Hub blob's name promises about its bytes: blobs/<sha256> for LFS files,
// blobs/<git object id> (sha1 of "blob <size>\0" and the bytes) for the others. Checked by
// `ballast cache verify` for every blob, and by loads with integrity checks on for each cached
// blob they use.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "io/os.hpp"

namespace ballast {

// The digest the blob at `blob` is named by and the one its bytes have ("sha256:<hex>" or
// "git-sha1:<hex>"); nullopt for a name that is neither.
std::optional<std::pair<std::string, std::string>> hub_blob_digests(
    const std::shared_ptr<const Os>& os, const std::filesystem::path& blob);

// Checks the cached blob that `file` (a snapshot's link to it) resolves to against its name
// before a load uses it: Error(integrity) naming both digests when they differ. A file is
// hashed once per process while it stays the same (its inode, size, modification and change
// times: a write, even one that restores the modification time, moves the change time).
// `source` names the file in errors.
void check_cached_hub_blob(const std::shared_ptr<const Os>& os, const std::filesystem::path& file,
                           const std::string& source);

}  // namespace ballast
