// InflatedSource: a ByteSource over one deflated zip member that inflates lazily, on demand.
//
// Small reads (up to 1 MiB past what is kept) inflate only as far as the highest byte asked
// for (a parser reading a member's header inflates a few KiB, not the member) and keep the
// bytes, so later small reads are memcpys. A larger read that starts where the stream stands
// (a tensor loaded in read mode, the views of a storage read in order) inflates straight into
// the caller's buffer and keeps nothing: one copy of the member, not two. A read that starts
// past the stream keeps what it inflates, gap included. Each member is inflated at most once
// per load: a loader that will read several views of it in one load says so first
// (expect_several_reads), and the source then keeps every byte it inflates; a read behind bytes
// streamed past without being kept (views read out of order by separate loads) inflates the
// member once more from its start and from then on keeps everything, so no member is inflated
// more than twice in all. mapping() inflates the whole member into the kept buffer and serves
// it (and mapping_produces_bytes() says so, so the read engine asks read_at instead).
// Output is bounded by the member's declared size, which the caller has already checked
// against Limits (a stream producing more fails with limit_exceeded, never grows memory). The
// CRC-32 is checked once the stream ends (Error integrity). Thread-safe: one mutex guards the
// inflater.
#pragma once

#include <cstdint>
#include <memory>

#include "ballast/byte_source.hpp"
#include "formats/zip/zip_archive.hpp"

namespace ballast {

// `compressed` holds exactly the member's deflate stream; `member` gives the declared size and
// CRC; `archive_name` and member.data_offset place errors.
std::shared_ptr<ByteSource> make_inflated_source(std::shared_ptr<ByteSource> compressed,
                                                 const ZipMember& member, std::string name,
                                                 std::string archive_name);

// Inflation passes begun from a member's first byte, by every inflated source of the process
// so far: how tests see that a member is not re-inflated for each read.
uint64_t inflation_passes_started();

}  // namespace ballast
