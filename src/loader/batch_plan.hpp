// BatchPlan: how the tensors of one batch are read (docs/design.md, "Batches"), decided after
// every spec is resolved and before any byte is read. The large owned host tensors are placed
// in one arena (core/batch_arena); with O_DIRECT, the plain reads of each local file become
// one sweep (io/direct_sweep) that keeps the device's queue full across tensors; small tensors
// whose reads cost a round trip are read in coalesced runs (loader/coalesced_reads); every
// other tensor is a job of its own. Jobs are ordered earliest spec first, so a streaming
// caller gets the first layers first. run_sweep and run_coalesced run the jobs of several
// tensors.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "core/batch_arena.hpp"
#include "io/local_file.hpp"
#include "io/read_engine.hpp"
#include "loader/coalesced_reads.hpp"
#include "loader/prepared_load.hpp"

namespace ballast {

struct BatchSettings {
  ReadMode read_mode = ReadMode::automatic;
  size_t alignment = 64;
  uint64_t read_chunk_bytes = 16 << 20;
  uint64_t staging_bytes_per_thread = 32 << 20;
};

// The plain host reads of one local file, read in one O_DIRECT sweep.
struct FileSweep {
  LocalFile file;               // with base 0: the offsets below are file offsets
  std::vector<size_t> specs;    // in spec order
  std::vector<uint64_t> first;  // file offset of each spec's bytes
};

// One spec on its own, one coalesced run of small ones, or one file's sweep.
struct BatchJob {
  size_t first_spec = 0;  // the smallest spec number in the job
  std::span<const SmallRead> run;
  const FileSweep* sweep = nullptr;
};

class BatchPlan {
 public:
  // Points the tensors placed in the arena at it (their device_factory) and splits the batch
  // into jobs. Keep the plan until every job has run: it holds the arena, the sweeps and runs.
  BatchPlan(std::vector<PreparedLoad>& prepared, const BatchSettings& settings);
  BatchPlan(const BatchPlan&) = delete;
  BatchPlan& operator=(const BatchPlan&) = delete;

  const std::vector<BatchJob>& jobs() const { return jobs_; }

 private:
  std::shared_ptr<BatchArena> arena_;  // null when no arena pays or the kernel refuses one
  std::map<int, FileSweep> sweeps_;    // by O_DIRECT descriptor: one per open file
  std::vector<SmallRead> small_;       // the coalesced runs point into it
  std::vector<BatchJob> jobs_;
};

using TensorDelivery = std::function<void(size_t spec, TensorRef tensor)>;

// Allocates every tensor of `sweep`, reads them in one sweep and delivers each as its last
// byte lands. An error names the tensor whose bytes hold the failing offset.
void run_sweep(const FileSweep& sweep, const std::vector<PreparedLoad>& prepared, size_t alignment,
               const ReadEngineOptions& io, const TensorDelivery& deliver);

// Allocates the tensors of a coalesced run, reads its span once and delivers them.
void run_coalesced(std::span<const SmallRead> run, const std::vector<PreparedLoad>& prepared,
                   size_t alignment, const ReadEngineOptions& io, const TensorDelivery& deliver);

}  // namespace ballast
