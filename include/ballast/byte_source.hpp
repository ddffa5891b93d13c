// ByteSource: one positional-read interface for every place bytes live (a local file, memory,
// a slice of another source, later HTTP and S3 objects).
//
// `read_at` is thread-safe and reads exactly the requested bytes or throws Error (io when the
// system fails, invalid_format when the range lies past the end). Local files and memory may
// also expose their whole contents as a MappedRegion for zero-copy access. A source of your own
// implements size, read_at, name and, optionally, mapping(): how ballast's own local files
// reach the read engine's faster paths (io_uring, O_DIRECT) is internal to the library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace ballast {

// Memory that stays valid while the region object lives (an mmap, a buffer).
class MappedRegion {
 public:
  virtual ~MappedRegion() = default;
  virtual const std::byte* data() const = 0;
  virtual uint64_t size() const = 0;
  // True for a private copy-on-write mapping that may be written in place: a write copies the
  // page for this process and never reaches the file.
  virtual bool writable() const { return false; }
};

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual uint64_t size() const = 0;
  virtual void read_at(uint64_t offset, std::span<std::byte> out) const = 0;
  // The whole source as memory, or null when that is impossible or unwise.
  virtual std::shared_ptr<const MappedRegion> mapping() const { return nullptr; }
  // Path, URL or other description for error messages.
  virtual const std::string& name() const = 0;

  // Reads [offset, offset + length) into a new vector; checks the range first.
  std::vector<std::byte> read(uint64_t offset, uint64_t length) const;
};

// A window [offset, offset + length) of another source; maps when the parent maps.
std::shared_ptr<ByteSource> make_slice_source(std::shared_ptr<ByteSource> parent, uint64_t offset,
                                              uint64_t length, std::string name = {});
// Bytes in memory; `owner` keeps them alive.
std::shared_ptr<ByteSource> make_memory_source(std::span<const std::byte> bytes,
                                               std::shared_ptr<const void> owner, std::string name);
std::shared_ptr<ByteSource> make_memory_source(std::vector<std::byte> bytes, std::string name);

}  // namespace ballast
