// Local files as ByteSources: positional reads with pread, and an optional read-only mmap of
// the whole file for zero-copy tensors. The size is fixed when the file is opened; every parser
// checks its ranges against it, so a file shorter than its header claims fails at open instead
// of raising SIGBUS on first touch.
#pragma once

#include <filesystem>
#include <memory>

#include "ballast/byte_source.hpp"

namespace ballast {

struct FileOpenOptions {
  bool allow_mmap = true;  // false: mapping() always returns null (read mode)
};

// Opens `path` read-only. Throws Error(not_found) when it does not exist and Error(io) on other
// failures. With allow_mmap, mapping() maps the file on first use unless it lives on a network
// or FUSE file system (where mmap is slow or can fault), where it returns null.
std::shared_ptr<ByteSource> open_file_source(const std::filesystem::path& path,
                                             FileOpenOptions options = {});

}  // namespace ballast
