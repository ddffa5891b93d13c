// InflatedSource: a ByteSource over one deflated zip member that inflates lazily, on demand.
//
// Reads inflate only as far as the highest byte asked for (a parser reading a member's header
// inflates a few KiB, not the member); the bytes produced are kept, so later reads are memcpys.
// Output is bounded by the member's declared size, which the caller has already checked
// against Limits (a stream producing more fails with limit_exceeded, never grows memory). The
// CRC-32 is checked once the stream ends (Error integrity). mapping() inflates the whole member
// and serves the buffer. Thread-safe: one mutex guards the inflater.
#pragma once

#include <memory>

#include "ballast/byte_source.hpp"
#include "formats/zip/zip_archive.hpp"

namespace ballast {

// `compressed` holds exactly the member's deflate stream; `member` gives the declared size and
// CRC; `archive_name` and member.data_offset place errors.
std::shared_ptr<ByteSource> make_inflated_source(std::shared_ptr<ByteSource> compressed,
                                                 const ZipMember& member, std::string name,
                                                 std::string archive_name);

}  // namespace ballast
