// The byte ranges behind a strided view, read range by range: a view whose innermost stride is
// 1 (a column slice, a tensor-parallel shard of an inner dimension) is a sequence of row runs;
// runs that touch are one run, and runs separated by at most a gap are read as one range into
// staging (the gap read and dropped, cheaper than another request). A source that cannot be
// mapped (HTTP, S3, the Hub without a cache, read mode) so sends only the view's bytes, not
// the span the view covers. The same ranges are what planned_reads reports.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>

#include "io/read_engine.hpp"
#include "loader/coalesced_reads.hpp"
#include "transform/plan.hpp"

namespace ballast {

struct ViewRun {
  uint64_t offset = 0;  // source byte offset
  uint64_t nbytes = 0;
  uint64_t out = 0;  // byte position in the dense output
};

// True when the view can be read as runs: contiguous, or its innermost stride is 1 and its
// elements are whole bytes.
bool readable_by_runs(const View& view);

// Calls `read(runs)` for each range to read, in output order: the runs of one range, whose
// span (first offset to last end) is at most limits.max_span_bytes unless it is a single run.
void for_each_read(const View& view, const CoalesceLimits& limits,
                   const std::function<void(std::span<const ViewRun>)>& read);

// Reads the view's elements, in row-major output order, into dst (the view's stored bytes,
// dense). Requires readable_by_runs(view).
void read_view_runs(const View& view, std::byte* dst, const CoalesceLimits& limits,
                    const ReadEngineOptions& io);

}  // namespace ballast
