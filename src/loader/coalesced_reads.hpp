// Coalesced reads of small tensors. Where every read costs a round trip (HTTP, S3 or the Hub
// read without a cache), small tensors that lie close together in one source are read as one
// span into staging memory and copied out, so the hundreds of norms and biases of a checkpoint
// cost a few requests instead of one each. From a page-cached local file a read costs one
// system call of about a microsecond, less than the extra copy through staging, so those are
// not coalesced; with O_DIRECT a local file's tensors are one sweep (direct_sweep.hpp). The
// loader decides (DefaultLoader::coalescible).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "ballast/byte_source.hpp"
#include "io/read_engine.hpp"

namespace ballast {

struct SmallRead {
  size_t index = 0;  // the caller's tensor number
  const ByteSource* source = nullptr;
  uint64_t offset = 0;
  uint64_t nbytes = 0;
};

struct CoalesceLimits {
  uint64_t max_tensor_bytes = 1 << 20;  // larger tensors are read on their own (in chunks)
  uint64_t max_gap_bytes = 64 << 10;    // bytes between two tensors that are read and dropped
  uint64_t max_span_bytes = 16 << 20;   // one staged read (the loader passes its staging share)
};

// Sorts `reads` by source and offset and splits them into runs, returned as [begin, end) index
// ranges into `reads`: within a run the reads share a source, each starts at most
// max_gap_bytes after the previous one ends, and the run spans at most max_span_bytes. A read
// larger than max_tensor_bytes (or than the span) is a run of its own.
std::vector<std::pair<size_t, size_t>> coalesce_runs(std::vector<SmallRead>& reads,
                                                     const CoalesceLimits& limits);

// Reads the span of one run with a single read_into and copies each read's bytes to its
// destination, `outputs[i]` for `run[i]`.
void read_run(std::span<const SmallRead> run, std::span<std::byte* const> outputs,
              const ReadEngineOptions& io);

}  // namespace ballast
