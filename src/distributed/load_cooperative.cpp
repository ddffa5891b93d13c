// load_cooperative (ballast/distributed.hpp): plan, then per round each rank reads its part and
// the parts are exchanged: all-gathered in place into the round buffer when every rank keeps
// the round's tensors whole, else all-to-all so that each rank receives only the shards it
// keeps (shard_exchange.hpp). Each rank makes its results from what it received: as views of
// the buffer when a spec asks for the bytes as received, else through the loader (a raw memory
// source over the received bytes, with the spec's remaining steps), copied out of the buffer so
// that it can go. Over a device communicator the buffers are device memory and only views are
// made.
#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <variant>

#include <fmt/format.h>

#include "ballast/cuda.hpp"
#include "ballast/error.hpp"
#include "ballast/hash.hpp"
#include "ballast/storage.hpp"
#include "distributed/collective_status.hpp"
#include "distributed/cooperative_plan.hpp"
#include "distributed/copy_check.hpp"
#include "distributed/shard_exchange.hpp"

namespace ballast {
namespace {

using distributed::Exchange;
using distributed::Layout;
using distributed::Piece;
using distributed::Plan;
using distributed::PlannedTensor;
using distributed::Round;
using distributed::run_collectively;
using distributed::ShardDims;

const WeightSource& common_source(const std::vector<TensorSpec>& specs) {
  if (specs.empty()) throw Error(ErrorCode::invalid_argument, "a cooperative load of no tensors");
  const std::string first = describe(specs.front().source);
  for (const TensorSpec& spec : specs) {
    if (describe(spec.source) != first)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("a cooperative load reads one source: {} and {}", first,
                              describe(spec.source)));
  }
  return specs.front().source;
}

// True when `mine` is the same on every rank.
bool same_on_every_rank(Communicator& comm, int64_t mine) {
  const int64_t highest = comm.allreduce_max(mine);
  const int64_t lowest = -comm.allreduce_max(-mine);
  return highest == lowest;
}

int64_t fingerprint(const std::string& text) {
  const std::string digest = sha256_hex(std::as_bytes(std::span(text)));
  return static_cast<int64_t>(std::stoull(digest.substr(0, 15), nullptr, 16));
}

// Every rank must plan from the same checkpoint; the same on every rank, so all throw or none.
void check_same_plan(Communicator& comm, const Plan& plan) {
  if (!same_on_every_rank(comm, distributed::plan_fingerprint(plan)))
    throw Error(ErrorCode::integrity,
                "cooperative load: the ranks see different checkpoints (names, dtypes or shapes "
                "differ)");
}

// The dimension of this rank's Shard that leads `spec`'s steps, when it is over the whole
// communicator and without parts; else nothing.
std::optional<int> own_shard_dim(const TensorSpec& spec, const TensorInfo& info, int rank,
                                 int world) {
  if (spec.transformations.empty()) return std::nullopt;
  const auto* shard = std::get_if<Shard>(&spec.transformations.front());
  const auto dims = static_cast<int>(info.shape.size());
  if (!shard || shard->rank != rank || shard->world != world || shard->parts.size() > 1 ||
      shard->dim >= dims || shard->dim < -dims)
    return std::nullopt;
  return shard->dim < 0 ? shard->dim + dims : shard->dim;
}

// The tensors this rank keeps a shard of: every spec naming one leads with this rank's Shard
// of the same dimension, and the tensor can be cut by rows (a dtype of whole elements, 1+
// dimensions), and the communicator has alltoallv. Agreed: when the ranks differ, every rank
// keeps every tensor whole.
ShardDims agreed_shard_dims(Communicator& comm, const std::vector<TensorSpec>& specs,
                            const Plan& plan) {
  std::map<std::string, const TensorInfo*> infos;
  for (const Round& round : plan.rounds)
    for (const PlannedTensor& t : round.tensors) infos.emplace(t.name, &t.info);
  std::map<std::string, std::optional<int>> dims;  // nullopt: kept whole
  for (const TensorSpec& spec : specs) {
    const TensorInfo& info = *infos.at(spec.name);
    std::optional<int> d = own_shard_dim(spec, info, comm.rank(), comm.size());
    if (dtype_element_size(info.dtype) == 0) d.reset();
    auto [it, first] = dims.emplace(spec.name, d);
    if (!first && it->second != d) it->second.reset();
  }
  ShardDims out;
  std::string text;
  const bool exchanges_shards = comm.has_alltoallv();
  for (const auto& [name, d] : dims)
    if (d && exchanges_shards) {
      out.emplace(name, *d);
      text += fmt::format("{}:{};", name, *d);
    }
  if (!same_on_every_rank(comm, fingerprint(text))) out.clear();
  return out;
}

// The steps left once the rank's shard was received.
std::vector<Transformation> remaining_steps(const TensorSpec& spec, const ShardDims& dims) {
  if (!dims.contains(spec.name)) return spec.transformations;
  return {spec.transformations.begin() + 1, spec.transformations.end()};
}

bool usable_as_received(const TensorSpec& spec, const ShardDims& dims, Device device, DType dtype,
                        const std::vector<int64_t>& shape) {
  return remaining_steps(spec, dims).empty() && spec.device == device &&
         (spec.shape.empty() || spec.shape == shape) && (!spec.dtype || *spec.dtype == dtype);
}

// Over device memory the results are views only: every spec must ask for what it receives.
void check_device_specs(const std::vector<TensorSpec>& specs, const Plan& plan,
                        const ShardDims& dims, Device device, int rank, int world) {
  std::map<std::string, std::pair<DType, std::vector<int64_t>>> received;  // dtype, kept shape
  for (const Round& round : plan.rounds) {
    const Layout layout = distributed::layout_of(round, dims, rank, world);
    for (size_t i = 0; i < round.tensors.size(); ++i)
      received.emplace(round.tensors[i].name,
                       std::pair{round.tensors[i].info.dtype, layout.shapes[i]});
  }
  for (const TensorSpec& spec : specs) {
    const auto& [dtype, shape] = received.at(spec.name);
    if (usable_as_received(spec, dims, device, dtype, shape)) continue;
    throw Error(ErrorCode::unsupported,
                fmt::format("cooperative load over {} memory: tensor '{}' is asked for on {} "
                            "with {} steps; over a device communicator each tensor must be "
                            "asked for on that device, as stored or as the rank's Shard alone "
                            "(the same dim on every rank)",
                            to_string(device), spec.name, to_string(spec.device),
                            spec.transformations.size()));
  }
}

// Loads `pieces` through the loader, calling `use(piece, bytes)` for each as it completes.
template <typename Use>
void for_each_piece(WeightLoader& loader, const WeightSource& source,
                    const std::vector<Piece>& pieces, Use&& use) {
  std::vector<TensorSpec> specs;
  std::map<std::string, const Piece*> by_name;
  for (const Piece& piece : pieces) {
    TensorSpec spec{.name = piece.tensor, .source = source};
    if (!piece.whole)
      spec.transformations.push_back(
          Slice{.dim = 0, .start = piece.first_row, .end = piece.end_row});
    specs.push_back(std::move(spec));
    by_name.emplace(piece.tensor, &piece);
  }
  loader.load_tensors_streaming(std::move(specs), [&](const std::string& name, TensorRef t) {
    const Piece& piece = *by_name.at(name);
    if (t->nbytes() != piece.nbytes || t->device().kind != Device::Kind::cpu)
      throw Error(ErrorCode::integrity,
                  fmt::format("cooperative load: rows {}..{} of '{}' came as {} bytes, not {}",
                              piece.first_row, piece.end_row, name, t->nbytes(), piece.nbytes));
    use(piece, std::span<const std::byte>(t->data(), piece.nbytes));
  });
}

// The digests of `pieces`, in their order.
using PieceDigests = distributed::PieceDigests;
PieceDigests digests_of(const std::vector<Piece>& pieces,
                        const std::map<std::string, std::string>& by_tensor) {
  PieceDigests out;
  for (const Piece& piece : pieces) out.push_back(by_tensor.at(piece.tensor));
  return out;
}

// Reads this rank's pieces of `round` into `buffer`, which holds the round's bytes from
// `base` on, and, when `digests` is given, hashes each; returns the bytes read.
uint64_t read_pieces(WeightLoader& loader, const WeightSource& source,
                     const std::vector<Piece>& pieces, std::byte* buffer, uint64_t base,
                     PieceDigests* digests) {
  uint64_t read = 0;
  std::map<std::string, std::string> hashed;
  for_each_piece(loader, source, pieces, [&](const Piece& piece, std::span<const std::byte> bytes) {
    std::memcpy(buffer + (piece.offset - base), bytes.data(), bytes.size());
    if (digests) hashed.emplace(piece.tensor, sha256_hex(bytes));
    read += bytes.size();
  });
  if (digests) *digests = digests_of(pieces, hashed);
  return read;
}

// Reads `pieces` (another rank's part) only to hash them; returns their digests.
PieceDigests hash_pieces(WeightLoader& loader, const WeightSource& source,
                         const std::vector<Piece>& pieces, uint64_t& read) {
  std::map<std::string, std::string> hashed;
  for_each_piece(loader, source, pieces, [&](const Piece& piece, std::span<const std::byte> bytes) {
    hashed.emplace(piece.tensor, sha256_hex(bytes));
    read += bytes.size();
  });
  return digests_of(pieces, hashed);
}

TensorRef renamed(const TensorRef& t, const std::string& name) {
  auto out = std::make_shared<Tensor>(name, t->dtype(), t->shape(), t->storage(),
                                      t->storage_offset(), t->nbytes());
  out->set_parts(t->parts());
  return out;
}

// A result that views the received buffer gets bytes of its own (the buffer is freed after
// the round).
TensorRef detached(const TensorRef& t, const Storage& received) {
  const std::byte* data = t->storage()->data();
  const bool inside = data >= received.data() && data < received.data() + received.size();
  if (!inside || t->device().kind != Device::Kind::cpu) return t;
  auto storage = make_host_buffer(t->nbytes(), 64);
  std::memcpy(storage->data(), t->data(), t->nbytes());
  auto out = std::make_shared<Tensor>(t->name(), t->dtype(), t->shape(), std::move(storage), 0,
                                      t->nbytes());
  out->set_parts(t->parts());
  return out;
}

// The results of the specs whose tensors `round` brought, from `buffer` laid out as `layout`,
// into `results`.
void make_results(WeightLoader& loader, const std::vector<TensorSpec>& specs, const Round& round,
                  const ShardDims& dims, const Layout& layout,
                  const std::shared_ptr<Storage>& buffer, std::vector<TensorRef>& results) {
  std::map<std::string, size_t> planned;
  for (size_t i = 0; i < round.tensors.size(); ++i) planned.emplace(round.tensors[i].name, i);
  std::vector<TensorSpec> through_loader;
  std::vector<size_t> positions;
  for (size_t s = 0; s < specs.size(); ++s) {
    auto found = planned.find(specs[s].name);
    if (found == planned.end()) continue;
    const size_t i = found->second;
    const PlannedTensor& t = round.tensors[i];
    if (usable_as_received(specs[s], dims, buffer->device(), t.info.dtype, layout.shapes[i])) {
      results[s] = std::make_shared<Tensor>(t.name, t.info.dtype, layout.shapes[i], buffer,
                                            layout.offsets[i], layout.sizes[i]);
      continue;
    }
    // The owner stays null: the buffer outlives this load, and no result keeps a view.
    WeightSource received = WeightSource::memory(
        {.bytes = std::span<const std::byte>(buffer->data() + layout.offsets[i], layout.sizes[i]),
         .format = WeightFormat::raw()});
    received.format = WeightFormat::raw();
    received.raw_layout = RawLayout{.dtype = t.info.dtype, .shape = layout.shapes[i]};
    TensorSpec spec = specs[s];
    spec.name.clear();
    spec.source = std::move(received);
    spec.transformations = remaining_steps(specs[s], dims);
    through_loader.push_back(std::move(spec));
    positions.push_back(s);
  }
  if (through_loader.empty()) return;
  std::vector<TensorRef> loaded = loader.load_tensors(std::move(through_loader));
  for (size_t j = 0; j < loaded.size(); ++j) {
    const size_t s = positions[j];
    results[s] = detached(renamed(loaded[j], specs[s].name), *buffer);
  }
}

// Where the exchanged buffers are allocated: host memory, or the communicator's device.
class Buffers {
 public:
  Buffers(Device device, std::shared_ptr<TensorFactory> factory)
      : device_(device), factory_(std::move(factory)) {
    if (device_.is_host()) return;
    if (!factory_) factory_ = make_cuda_tensor_factory(device_.index);
    if (factory_->device() != device_)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("cooperative load: the device factory allocates on {}, the "
                              "communicator exchanges {} memory",
                              to_string(factory_->device()), to_string(device_)));
  }
  std::shared_ptr<Storage> allocate(uint64_t nbytes) const {
    nbytes = std::max<uint64_t>(nbytes, 1);
    return device_.is_host() ? make_host_buffer(nbytes, 64) : factory_->allocate(nbytes, 256);
  }
  // `host` (n bytes) at `offset` of `dst`, a buffer from allocate().
  void upload(Storage& dst, uint64_t offset, const std::byte* host, uint64_t n) const {
    if (n == 0) return;  // an empty part may have no memory at all
    if (device_.is_host())
      std::memcpy(dst.data() + offset, host, n);
    else
      factory_->upload(dst, offset, host, n);
  }

 private:
  Device device_;
  std::shared_ptr<TensorFactory> factory_;
};

struct RoundOutcome {
  std::shared_ptr<Storage> buffer;
  Layout layout;
  uint64_t storage_bytes = 0;
  uint64_t received_bytes = 0;
  uint64_t verified_bytes = 0;
};

bool keeps_all_whole(const Round& round, const ShardDims& dims) {
  return std::none_of(round.tensors.begin(), round.tensors.end(),
                      [&](const PlannedTensor& t) { return dims.contains(t.name); });
}

// With `check_copies`, this rank also reads the part of the next rank, only to hash it, and
// the ranks compare digests (copy_check.hpp) before any part is exchanged.
struct PartCheck {
  bool enabled = false;
  PieceDigests own, checked;
};

// Reads the next rank's part of `round` again and hashes it, when checking.
void read_checked_part(WeightLoader& loader, const WeightSource& source, const Round& round,
                       int rank, PartCheck& check, RoundOutcome& out) {
  if (!check.enabled) return;
  const auto next = static_cast<size_t>(rank + 1) % round.pieces.size();
  check.checked = hash_pieces(loader, source, round.pieces[next], out.verified_bytes);
}

void compare_parts(Communicator& comm, const WeightSource& source, const Round& round,
                   const PartCheck& check) {
  if (!check.enabled) return;
  run_collectively(comm, "verifying", [&] {
    distributed::compare_part_digests(comm, round, check.own, check.checked, describe(source));
  });
}

// Reads this rank's part of `round` and exchanges the parts: all-gathered in place when every
// tensor is kept whole, else all-to-all (what each rank keeps).
RoundOutcome exchange_round(WeightLoader& loader, Communicator& comm, const Buffers& buffers,
                            const WeightSource& source, const Round& round, const ShardDims& dims,
                            bool check_copies) {
  const auto me = static_cast<size_t>(comm.rank());
  PartCheck check{.enabled = check_copies};
  const bool host = comm.memory_device().is_host();
  const uint64_t part_offset = round.part_offsets[me], part_size = round.part_sizes[me];
  RoundOutcome out;
  std::shared_ptr<Storage> part;
  if (keeps_all_whole(round, dims)) {
    out.layout = distributed::layout_of(round, dims, comm.rank(), comm.size());
    run_collectively(comm, "reading", [&] {
      out.buffer = buffers.allocate(round.nbytes);
      // On the host the part is read in place; for a device, into host memory first.
      part = host ? out.buffer : make_host_buffer(std::max<uint64_t>(part_size, 1), 64);
      const uint64_t base = host ? 0 : part_offset;
      out.storage_bytes = read_pieces(loader, source, round.pieces[me], part->data(), base,
                                      check.enabled ? &check.own : nullptr);
      read_checked_part(loader, source, round, comm.rank(), check, out);
      if (!host) buffers.upload(*out.buffer, part_offset, part->data(), part_size);
    });
    compare_parts(comm, source, round, check);
    comm.allgatherv_in_place(std::span(out.buffer->data(), round.nbytes), round.part_sizes,
                             round.part_offsets);
    out.received_bytes = round.nbytes - part_size;
    return out;
  }
  Exchange ex;
  std::shared_ptr<Storage> send;
  run_collectively(comm, "reading", [&] {
    ex = distributed::plan_exchange(round, dims, comm.rank(), comm.size());
    part = make_host_buffer(std::max<uint64_t>(part_size, 1), 64);
    out.storage_bytes = read_pieces(loader, source, round.pieces[me], part->data(), part_offset,
                                    check.enabled ? &check.own : nullptr);
    read_checked_part(loader, source, round, comm.rank(), check, out);
    std::vector<std::byte> packed(ex.send_bytes);  // zeros in the alignment gaps
    for (const Exchange::Move& m : ex.packing)
      if (m.nbytes > 0) std::memcpy(packed.data() + m.to, part->data() + m.from, m.nbytes);
    send = buffers.allocate(ex.send_bytes);
    buffers.upload(*send, 0, packed.data(), packed.size());
    out.buffer = buffers.allocate(ex.mine.nbytes);
  });
  compare_parts(comm, source, round, check);
  comm.alltoallv(std::span(send->data(), ex.send_bytes), ex.send_counts, ex.send_displacements,
                 std::span(out.buffer->data(), ex.mine.nbytes), ex.recv_counts,
                 ex.recv_displacements);
  out.layout = std::move(ex.mine);
  for (size_t r = 0; r < ex.recv_counts.size(); ++r)
    if (r != me) out.received_bytes += ex.recv_counts[r];
  return out;
}

}  // namespace

CooperativeResult load_cooperative(WeightLoader& loader, Communicator& comm,
                                   const std::vector<TensorSpec>& specs,
                                   const CooperativeOptions& options) {
  const Device device = comm.memory_device();
  WeightSource source;
  WeightMetadata meta;
  Plan plan;
  std::optional<Buffers> buffers;
  run_collectively(comm, "planning", [&] {
    source = common_source(specs);
    std::set<std::string> names;
    for (const TensorSpec& spec : specs) names.insert(spec.name);
    meta = loader.get_metadata(source);
    plan = distributed::make_plan(meta, names, comm.size(),
                                  std::max<uint64_t>(options.round_bytes, 1));
    buffers.emplace(device, options.device_factory);
  });
  check_same_plan(comm, plan);
  run_collectively(comm, "checking the copies",
                   [&] { distributed::check_same_identity(comm, source, meta); });
  const bool check_copies =
      options.verify_copies && distributed::ranks_may_read_different_copies(comm, source);
  const ShardDims dims = agreed_shard_dims(comm, specs, plan);
  if (!device.is_host())
    run_collectively(comm, "checking the specs", [&] {
      check_device_specs(specs, plan, dims, device, comm.rank(), comm.size());
    });

  CooperativeResult result;
  result.tensors.resize(specs.size());
  for (const Round& round : plan.rounds) {
    const RoundOutcome r =
        exchange_round(loader, comm, *buffers, source, round, dims, check_copies);
    result.storage_bytes += r.storage_bytes;
    result.received_bytes += r.received_bytes;
    result.verified_bytes += r.verified_bytes;
    ++result.rounds;
    run_collectively(comm, "transforming", [&] {
      make_results(loader, specs, round, dims, r.layout, r.buffer, result.tensors);
    });
  }
  return result;
}

}  // namespace ballast
