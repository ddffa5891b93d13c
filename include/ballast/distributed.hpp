// Cooperative loading across N ranks (docs/distributed.md): the ranks agree on a plan that
// splits a checkpoint's stored bytes into N near-equal parts, each rank reads only its part
// from storage (a file, a shared file system, a URL, the Hub, S3), and the parts are exchanged
// so that every rank ends with the tensors it asked for: whole (replicated) or, with a Shard
// step in its specs, its tensor-parallel shard.
//
// The exchange goes through a Communicator: MPI for hosts (ballast/mpi_communicator.hpp, when
// ballast is built with an MPI library), NCCL for CUDA device memory
// (ballast/nccl_communicator.hpp, when built with CUDA and NCCL). A failure on any rank (a missing
// file, a hostile file, a network fault) becomes the same ballast::Error on every rank: no rank is
// left waiting in a collective.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "ballast/device.hpp"
#include "ballast/loader.hpp"
#include "ballast/spec.hpp"
#include "ballast/tensor.hpp"

namespace ballast {

// The collectives cooperative loading needs. Every rank calls each operation in the same order
// (they are collectives); implementations throw Error(network) when the transport fails. The
// buffers of allgatherv_in_place, alltoallv and broadcast lie in memory_device()'s memory.
class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Where the exchanged buffers live: host memory, or one device's memory (NCCL: cuda(n)).
  virtual Device memory_device() const { return Device::cpu(); }
  // The communicator for the host-memory messages that coordinate the ranks (the agreement on
  // failure): this one, or the host communicator a device communicator was started over.
  virtual Communicator& control() { return *this; }
  // All-gather of variable parts in place: rank r's part, counts[r] bytes, already lies at
  // displacements[r] of `buffer`; afterwards every rank's buffer holds every part.
  virtual void allgatherv_in_place(std::span<std::byte> buffer, std::span<const uint64_t> counts,
                                   std::span<const uint64_t> displacements) = 0;
  // Whether alltoallv is there (a Python communicator may lack it): without it, ranks that keep
  // shards receive whole tensors.
  virtual bool has_alltoallv() const { return true; }
  // Personalized exchange: send_counts[r] bytes at send_displacements[r] of `send` go to rank r,
  // which receives them at its recv_displacements[this rank] of `recv`; recv_counts[r] is what
  // rank r sends this one.
  virtual void alltoallv(std::span<const std::byte> send, std::span<const uint64_t> send_counts,
                         std::span<const uint64_t> send_displacements, std::span<std::byte> recv,
                         std::span<const uint64_t> recv_counts,
                         std::span<const uint64_t> recv_displacements) = 0;
  // Rank `root`'s `bytes` into every rank's `bytes` (same size on every rank).
  virtual void broadcast(std::span<std::byte> bytes, int root) = 0;
  // The largest `value` over the ranks (the agreement on errors is built on it).
  virtual int64_t allreduce_max(int64_t value) = 0;
};

struct CooperativeOptions {
  // Stored bytes gathered per exchange round: a rank's host memory stays within its result
  // plus one round (a tensor larger than this is a round of its own).
  uint64_t round_bytes = 256 << 20;
  // With a device communicator: allocates the exchange buffers (and so the results) in its
  // device's memory; null: ballast's cudaMalloc factory (make_cuda_tensor_factory).
  std::shared_ptr<TensorFactory> device_factory;
  // Read each rank's part again on one other rank and compare digests before exchanging, so
  // that ranks reading different copies (a stale copy on one host) fail together instead of
  // mixing them (docs/distributed.md, "One checkpoint, verified"). Skipped when every rank
  // names the same remote object. Off: each rank reads 1/N instead of 2/N.
  bool verify_copies = true;
};

struct CooperativeResult {
  std::vector<TensorRef> tensors;  // in the order of the specs
  // Tensor bytes this rank read from storage or the network (its parts of the plan).
  uint64_t storage_bytes = 0;
  uint64_t received_bytes = 0;  // bytes that came from the other ranks
  size_t rounds = 0;            // exchange rounds
  // Bytes this rank read of another rank's part, only to check it (verify_copies).
  uint64_t verified_bytes = 0;
};

// Loads `specs` (every one naming the same source) cooperatively: a collective, called by every
// rank of `communicator` with the same specs, except that Shard steps may differ per rank. Each
// result equals what loader.load_tensor(spec) returns. Throws the same Error on every rank when
// any rank fails; the message names the rank.
//
// When every rank's specs for a tensor begin with its own Shard (rank = its rank, world = the
// communicator's size, the same dim, no parts), each rank receives only its shard's bytes;
// otherwise whole tensors are gathered. Over a device communicator (memory_device() cuda(n)),
// every spec must name that device and ask for the tensor as stored or for such a Shard alone:
// the results view device memory; anything else fails with Error(unsupported) on every rank.
CooperativeResult load_cooperative(WeightLoader& loader, Communicator& communicator,
                                   const std::vector<TensorSpec>& specs,
                                   const CooperativeOptions& options = {});

// The agreement on failure that keeps ranks from hanging, for a caller's own steps between
// collectives (load_cooperative makes it after each of its steps): collective; `failure` is
// this rank's error, null when its step succeeded. Returns when every rank succeeded, else
// throws on every rank the error of the lowest failing rank: its code, and a message naming
// `phase`, that rank and its message.
void agree_on_failure(Communicator& communicator, std::exception_ptr failure,
                      std::string_view phase);

}  // namespace ballast
