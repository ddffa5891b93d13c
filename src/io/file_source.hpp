// Local files as ByteSources: positional reads with pread, an optional read-only mmap of the
// whole file for zero-copy tensors, and the descriptors (buffered and O_DIRECT) for the read
// engine. Every system call goes through the Os in the options (io/os.hpp). The size is fixed when
// the file is opened; every parser checks its ranges against it, so a file shorter than its header
// claims fails at open instead of raising SIGBUS on first touch.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ballast/byte_source.hpp"
#include "ballast/config.hpp"
#include "io/local_file.hpp"
#include "io/os.hpp"

namespace ballast {

struct FileOpenOptions {
  bool allow_mmap = true;     // false: mapping() always returns null (the reading modes)
  bool map_anywhere = false;  // true: map network and uncached files too (mmap mode)
  // Makes every call on the file; a loader passes its own (the real one unless a test's).
  std::shared_ptr<const Os> os = real_os();
};

// What a read mode permits: automatic maps where it pays, mmap everywhere, the others never;
// the file is read through `os`.
FileOpenOptions file_open_options(ReadMode mode, std::shared_ptr<const Os> os);

// Opens `path` read-only. Throws Error(not_found) when it does not exist and Error(io) on other
// failures. With allow_mmap, mapping() maps the file on first use; unless map_anywhere, it
// returns null instead for a file on a network or FUSE file system (where mmap is slow or can
// fault) and for one mostly absent from the page cache (where a mapping faults page by page
// and chunked reads are faster).
std::shared_ptr<ByteSource> open_file_source(const std::filesystem::path& path,
                                             FileOpenOptions options = {});

// The whole of a small file (a shard index, say); Error(limit_exceeded) when it holds more than
// `max_bytes`. `name` describes the file in errors (a URL or hf:// name for cached copies).
std::vector<std::byte> read_small_file(const std::filesystem::path& path, uint64_t max_bytes,
                                       const std::string& name,
                                       std::shared_ptr<const Os> os = real_os());

// The text of a small file of the user's or of a cache (a config, a token file, a cache record
// or ref), or nullopt when there is none. Like every open here, a FIFO or device at that path
// is refused (invalid_argument), never read; more than `max_bytes` is limit_exceeded.
std::optional<std::string> read_small_text_file(const std::filesystem::path& path,
                                                uint64_t max_bytes,
                                                std::shared_ptr<const Os> os = real_os());

// A read-only mapping of the file bytes from `file.base` to its end, whatever the read mode
// (for gathering a large strided view without staging a copy); null when mmap fails.
std::shared_ptr<const MappedRegion> map_local_file(const LocalFile& file);

// A private copy-on-write mapping of its own of the `length` bytes at `file.base`, that the
// caller may write (a write copies the page for this process, never reaching the file); null
// when mmap fails.
std::shared_ptr<const MappedRegion> map_writable_copy(const LocalFile& file, uint64_t length);

}  // namespace ballast
