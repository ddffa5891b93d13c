// The O_DIRECT sweep (see direct_sweep.hpp).
#include "io/direct_sweep.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "io/batch_reader.hpp"
#include "util/checked.hpp"
#include "util/parallel_for.hpp"

namespace ballast {
namespace {

constexpr uint64_t kAlign = 4096;             // O_DIRECT offset, length and address alignment
constexpr uint64_t kWindowBytes = 1 << 20;    // one submitted read
constexpr uint64_t kMergeGapBytes = 1 << 20;  // a smaller hole between ranges is read through

uint64_t align_down(uint64_t v) { return v / kAlign * kAlign; }
uint64_t align_up(uint64_t v) { return align_down(v + kAlign - 1); }

// A reusable bounce buffer per thread, grown on demand up to the staging budget.
std::byte* thread_bounce(uint64_t bytes) {
  struct Freer {
    void operator()(std::byte* p) const { std::free(p); }
  };
  thread_local std::unique_ptr<std::byte, Freer> buffer;
  thread_local uint64_t size = 0;
  if (size < bytes) {
    buffer.reset(static_cast<std::byte*>(std::aligned_alloc(kAlign, bytes)));
    size = buffer ? bytes : 0;
    if (!buffer) throw Error(ErrorCode::limit_exceeded, "cannot allocate O_DIRECT bounce buffers");
  }
  return buffer.get();
}

// One sweep's shared state: the ranges in file order, the windows to read, and progress.
class Sweep {
 public:
  Sweep(const LocalFile& file, std::span<const DirectRange> ranges,
        const DirectSweepOptions& options, const std::string& name,
        const std::function<void(size_t)>& on_range_done)
      : file_(file),
        ranges_(ranges),
        name_(name),
        on_done_(on_range_done),
        remaining_(ranges.size()) {
    const uint64_t staging = std::max(align_down(options.staging_bytes_per_thread), kAlign);
    window_bytes_ = std::min(kWindowBytes, staging);
    order_ranges();
    cut_windows();
    const uint64_t depth = std::min<uint64_t>(
        {staging / window_bytes_, BatchReader::kMaxDepth, std::max<size_t>(windows_.size(), 1)});
    slots_ = static_cast<unsigned>(depth);
    use_uring_ = options.use_uring;
  }

  size_t windows() const { return windows_.size(); }

  // One thread's share: keeps `slots_` windows in flight until the cursor runs out.
  void run_pipeline() {
    try {
      pipeline();
    } catch (...) {
      failed_ = true;
      throw;
    }
  }

 private:
  struct Window {
    uint64_t start;   // file offset, aligned
    uint64_t length;  // aligned; may reach past the end of the file
  };
  struct Slot {
    size_t window = 0;
    uint64_t filled = 0;  // bytes of the window already read
  };

  [[noreturn]] void fail(ssize_t result, uint64_t at) const {
    if (result < 0)
      throw Error(ErrorCode::io,
                  fmt::format("read failed: {}", std::strerror(static_cast<int>(-result))),
                  {.source = name_, .offset = at});
    throw Error(ErrorCode::io, "file shrank while reading", {.source = name_, .offset = at});
  }

  uint64_t first_byte(size_t i) const { return file_.base + ranges_[i].offset; }
  uint64_t end_byte(size_t i) const { return first_byte(i) + ranges_[i].out.size(); }

  // Non-empty ranges sorted by their first byte, with the running maximum of their ends so
  // that the ranges overlapping any window are found by two binary searches.
  void order_ranges() {
    for (size_t i = 0; i < ranges_.size(); ++i) {
      const auto first = checked_add(file_.base, ranges_[i].offset);
      if (!first || !checked_add(*first, ranges_[i].out.size()))
        throw Error(ErrorCode::invalid_argument, "O_DIRECT range overflows a file offset",
                    {.source = name_, .offset = ranges_[i].offset});
      remaining_[i] = ranges_[i].out.size();
      if (!ranges_[i].out.empty()) sorted_.push_back(i);
    }
    std::sort(sorted_.begin(), sorted_.end(),
              [&](size_t a, size_t b) { return first_byte(a) < first_byte(b); });
    uint64_t end = 0;
    for (size_t i : sorted_) end_max_.push_back(end = std::max(end, end_byte(i)));
  }

  // The union of the ranges, holes under kMergeGapBytes included, in aligned windows.
  void cut_windows() {
    size_t k = 0;
    while (k < sorted_.size()) {
      const uint64_t start = align_down(first_byte(sorted_[k]));
      uint64_t end = align_up(end_max_[k]);
      while (++k < sorted_.size() && align_down(first_byte(sorted_[k])) <= end + kMergeGapBytes)
        end = std::max(end, align_up(end_max_[k]));
      for (uint64_t at = start; at < end; at += window_bytes_)
        windows_.push_back({at, std::min(window_bytes_, end - at)});
    }
  }

  std::optional<size_t> take_window() {
    if (failed_) return std::nullopt;
    const size_t w = cursor_.fetch_add(1);
    if (w >= windows_.size()) return std::nullopt;
    return w;
  }

  // Copies a finished window's bytes [start, start + filled) into every range it overlaps.
  void deliver(const Window& window, uint64_t filled, const std::byte* bytes) {
    const uint64_t lo = window.start, hi = window.start + window.length;
    // Sorted ranges that start before the window ends and whose running end passes its start.
    const auto starts_before = std::partition_point(sorted_.begin(), sorted_.end(),
                                                    [&](size_t i) { return first_byte(i) < hi; });
    const auto first = std::partition_point(end_max_.begin(), end_max_.end(),
                                            [&](uint64_t end) { return end <= lo; });
    for (auto it = sorted_.begin() + (first - end_max_.begin()); it < starts_before; ++it) {
      const size_t i = *it;
      const uint64_t from = std::max(lo, first_byte(i)), to = std::min(hi, end_byte(i));
      if (from >= to) continue;
      if (lo + filled < to) fail(0, std::max(lo + filled, from));  // the first byte missing
      std::memcpy(ranges_[i].out.data() + (from - first_byte(i)), bytes + (from - lo), to - from);
      if (remaining_[i].fetch_sub(to - from) == to - from && on_done_ && !failed_) on_done_(i);
    }
  }

  void pipeline() {
    std::byte* bounce = thread_bounce(slots_ * window_bytes_);
    BatchReader reader(*file_.os, use_uring_);
    std::vector<Slot> slot(slots_);
    auto issue = [&](unsigned s) {
      const Window& w = windows_[slot[s].window];
      reader.submit(s, file_.direct_fd, bounce + s * window_bytes_ + slot[s].filled,
                    w.length - slot[s].filled, w.start + slot[s].filled);
    };
    for (unsigned s = 0; s < slots_; ++s) {
      const auto w = take_window();
      if (!w) break;
      slot[s] = {*w, 0};
      issue(s);
    }
    while (reader.in_flight() > 0) {
      const auto done = reader.wait();
      const auto s = static_cast<unsigned>(done.tag);
      Slot& sl = slot[s];
      const Window& w = windows_[sl.window];
      if (done.result < 0) fail(done.result, w.start + sl.filled);
      sl.filled += static_cast<uint64_t>(done.result);
      // A short read is the end of the file (the window may reach past it) unless the file
      // is longer; then the rest is read again, which O_DIRECT allows only at aligned offsets.
      const bool at_end = done.result == 0 || w.start + sl.filled >= file_.file_size;
      if (sl.filled < w.length && !at_end) {
        if (sl.filled % kAlign != 0) fail(-EINVAL, w.start + sl.filled);
        issue(s);
        continue;
      }
      deliver(w, sl.filled, bounce + s * window_bytes_);
      if (const auto next = take_window()) {
        sl = {*next, 0};
        issue(s);
      }
    }
  }

  const LocalFile& file_;
  std::span<const DirectRange> ranges_;
  const std::string& name_;
  const std::function<void(size_t)>& on_done_;
  std::vector<std::atomic<uint64_t>> remaining_;  // bytes not yet copied, per range
  std::vector<size_t> sorted_;                    // non-empty range indices by first byte
  std::vector<uint64_t> end_max_;                 // running maximum end along sorted_
  std::vector<Window> windows_;
  uint64_t window_bytes_ = kWindowBytes;
  unsigned slots_ = 1;
  bool use_uring_ = true;
  std::atomic<size_t> cursor_{0};
  std::atomic<bool> failed_{false};
};

}  // namespace

void sweep_direct(const LocalFile& file, std::span<const DirectRange> ranges,
                  const DirectSweepOptions& options, const std::string& name,
                  const std::function<void(size_t)>& on_range_done) {
  Sweep sweep(file, ranges, options, name, on_range_done);
  if (on_range_done)
    for (size_t i = 0; i < ranges.size(); ++i)
      if (ranges[i].out.empty()) on_range_done(i);
  const size_t pipelines = std::min<size_t>(1 + options.helpers, sweep.windows());
  parallel_for(options.pool, options.helpers, pipelines, [&](size_t) { sweep.run_pipeline(); });
}

}  // namespace ballast
