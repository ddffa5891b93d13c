// Coalesced reads of small tensors (see coalesced_reads.hpp).
#include "loader/coalesced_reads.hpp"

#include <algorithm>
#include <cstring>
#include <memory>

namespace ballast {

std::vector<std::pair<size_t, size_t>> coalesce_runs(std::vector<SmallRead>& reads,
                                                     const CoalesceLimits& limits) {
  std::sort(reads.begin(), reads.end(), [](const SmallRead& a, const SmallRead& b) {
    return a.source != b.source ? std::less<>()(a.source, b.source) : a.offset < b.offset;
  });
  std::vector<std::pair<size_t, size_t>> runs;
  size_t begin = 0;
  uint64_t end_of_run = 0;  // one past the last byte of the open run
  for (size_t i = 0; i < reads.size(); ++i) {
    const SmallRead& r = reads[i];
    const bool joins =
        i > begin && r.source == reads[begin].source && r.nbytes <= limits.max_tensor_bytes &&
        r.offset >= reads[i - 1].offset && r.offset <= end_of_run + limits.max_gap_bytes &&
        std::max(end_of_run, r.offset + r.nbytes) - reads[begin].offset <= limits.max_span_bytes;
    if (i > begin && !joins) {
      runs.emplace_back(begin, i);
      begin = i;
    }
    if (i == begin)
      end_of_run = r.offset + r.nbytes;
    else
      end_of_run = std::max(end_of_run, r.offset + r.nbytes);
    // A large read closes its run at once: nothing joins it.
    if (r.nbytes > limits.max_tensor_bytes) {
      runs.emplace_back(begin, i + 1);
      begin = i + 1;
    }
  }
  if (begin < reads.size()) runs.emplace_back(begin, reads.size());
  return runs;
}

void read_run(std::span<const SmallRead> run, std::span<std::byte* const> outputs,
              const ReadEngineOptions& io) {
  if (run.empty()) return;
  const uint64_t first = run.front().offset;
  uint64_t last = first;
  for (const auto& r : run) last = std::max(last, r.offset + r.nbytes);
  auto staged = std::make_unique_for_overwrite<std::byte[]>(last - first);
  read_into(*run.front().source, first, {staged.get(), last - first}, io);
  for (size_t i = 0; i < run.size(); ++i)
    std::memcpy(outputs[i], staged.get() + (run[i].offset - first), run[i].nbytes);
}

}  // namespace ballast
