// Finding a zip archive's central directory from its end records. Python's zipfile (numpy.load)
// takes the last end-record signature and the ZIP64 end record just before its locator, and
// corrects every offset for data before the directory; miniz (torch.load) takes the last
// signature too but believes the stated offsets. So the chosen record must be the last
// signature, its comment must end the file, no earlier signature may also parse as a record
// ending the file, and the central directory must end exactly where the (ZIP64) end records
// begin: then every reader finds the same directory.
#pragma once

#include <cstdint>

#include "ballast/byte_source.hpp"
#include "ballast/limits.hpp"

namespace ballast::zip {

struct CentralDirectory {
  uint64_t entries = 0;
  uint64_t size = 0;
  uint64_t offset = 0;  // it ends at offset + size, where the end records begin
};

// Throws Error(invalid_format) naming the byte offset for missing, ambiguous or inconsistent
// end records, Error(unsupported) for multi-volume archives, Error(limit_exceeded) for a
// directory larger than limits.max_header_bytes.
CentralDirectory locate_central_directory(const ByteSource& source, const Limits& limits);

}  // namespace ballast::zip
