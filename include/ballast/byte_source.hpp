// ByteSource: one positional-read interface for every place bytes live (a local file, memory,
// a slice of another source, later HTTP and S3 objects).
//
// `read_at` is thread-safe and reads exactly the requested bytes or throws Error (io when the
// system fails, invalid_format when the range lies past the end). Local files and memory may
// also expose their whole contents as a MappedRegion for zero-copy access.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace ballast {

// The open local file behind a source, for the read engine's own system calls: byte `offset`
// of the source is byte `base + offset` of the file.
struct LocalFile {
  int fd = -1;         // opened for buffered reads
  int direct_fd = -1;  // the same file opened with O_DIRECT, or -1 where that failed
  uint64_t base = 0;
  uint64_t file_size = 0;
};

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
  // Whether mapping() would have to produce the bytes it returns (inflate a compressed zip
  // member) instead of handing out memory that exists. A reader that wants the bytes once
  // then asks read_at for them, straight into its own buffer: one copy, not two.
  virtual bool mapping_produces_bytes() const { return false; }
  // The local file behind the source, or nullopt (memory, network). `want_direct` opens the
  // O_DIRECT descriptor on first use. The descriptors live as long as the source.
  virtual std::optional<LocalFile> local_file(bool /*want_direct*/) const { return std::nullopt; }
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
