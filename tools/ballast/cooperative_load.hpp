// `ballast load --cooperative [--shard] [--device cpu|cuda] [--json] SOURCE`, run under mpirun:
// the ranks split the checkpoint's reads and exchange the parts over MPI (ballast/distributed.hpp)
// or, with --device cuda, over NCCL into each rank's GPU (the local rank modulo the host's GPUs;
// more ranks on a host than GPUs fail); each rank reports what it read from storage and the
// tensors it ends with (one JSON object per line with --json: rank, world, device,
// storage_bytes, received_bytes, verified_bytes (read again to check another rank's part), rounds,
// seconds and tensors: name -> {sha256, dtype, shape}; a tensor in device memory has no sha256).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "cli_common.hpp"

namespace ballast::cli {

struct CooperativeLoadOptions {
  SourceOptions source;
  std::vector<std::string> tensors;  // glob patterns; empty: every tensor
  std::string transform;
  bool json = false;
  bool shard = false;  // each rank keeps its tensor-parallel shard along shard_dim
  int shard_dim = 0;
  std::string device = "cpu";  // "cpu" or "cuda": where the tensors end (cuda: over NCCL)
  uint64_t round_bytes = 256 << 20;
};

// A failure every rank has already printed: the command exits 1 without printing it again.
class ReportedFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws Error(unsupported) when ballast was built without MPI (with --device cuda, every rank
// fails with Error(unsupported) when ballast was built without NCCL or a rank has no GPU). A load
// that fails (on every rank alike) is printed by each rank, which then waits for the others before
// it throws ReportedFailure: mpirun ends the whole job as soon as one rank exits with a failure, so
// a rank that exited first would cut the others off before they print.
void run_cooperative_load(const CooperativeLoadOptions& options);

}  // namespace ballast::cli
