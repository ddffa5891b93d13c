// load_cooperative (ballast/distributed.hpp): plan, then per round each rank reads its part
// into the round buffer, the parts are all-gathered in place, and each rank makes its results
// from the whole stored tensors: as views of the round buffer when a spec asks for the tensor
// as stored, else through the loader (a raw memory source over the gathered bytes, with the
// spec's steps), copied out of the round buffer so that it can go.
#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "ballast/storage.hpp"
#include "distributed/collective_status.hpp"
#include "distributed/cooperative_plan.hpp"

namespace ballast {
namespace {

using distributed::Piece;
using distributed::Plan;
using distributed::PlannedTensor;
using distributed::Round;
using distributed::run_collectively;

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

// Every rank must plan from the same checkpoint; the same on every rank, so all throw or none.
void check_same_plan(Communicator& comm, const Plan& plan) {
  const int64_t mine = distributed::plan_fingerprint(plan);
  const int64_t highest = comm.allreduce_max(mine);
  const int64_t lowest = -comm.allreduce_max(-mine);
  if (highest != lowest)
    throw Error(ErrorCode::integrity,
                "cooperative load: the ranks see different checkpoints (names, dtypes or shapes "
                "differ)");
}

// Reads this rank's pieces of `round` into `buffer`; returns the bytes read.
uint64_t read_pieces(WeightLoader& loader, const WeightSource& source,
                     const std::vector<Piece>& pieces, std::byte* buffer) {
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
  uint64_t read = 0;
  loader.load_tensors_streaming(std::move(specs), [&](const std::string& name, TensorRef t) {
    const Piece& piece = *by_name.at(name);
    if (t->nbytes() != piece.nbytes || t->device().kind != Device::Kind::cpu)
      throw Error(ErrorCode::integrity,
                  fmt::format("cooperative load: rows {}..{} of '{}' came as {} bytes, not {}",
                              piece.first_row, piece.end_row, name, t->nbytes(), piece.nbytes));
    std::memcpy(buffer + piece.offset, t->data(), piece.nbytes);
    read += piece.nbytes;
  });
  return read;
}

bool usable_as_stored(const TensorSpec& spec, const TensorInfo& info) {
  return spec.transformations.empty() && spec.device.kind == Device::Kind::cpu &&
         (spec.shape.empty() || spec.shape == info.shape) &&
         (!spec.dtype || *spec.dtype == info.dtype);
}

TensorRef renamed(const TensorRef& t, const std::string& name) {
  auto out = std::make_shared<Tensor>(name, t->dtype(), t->shape(), t->storage(),
                                      t->storage_offset(), t->nbytes());
  out->set_parts(t->parts());
  return out;
}

// A result that views the round buffer gets bytes of its own (the buffer is freed after the
// round).
TensorRef detached(const TensorRef& t, const Storage& round) {
  const std::byte* data = t->storage()->data();
  const bool inside = data >= round.data() && data < round.data() + round.size();
  if (!inside || t->device().kind != Device::Kind::cpu) return t;
  auto storage = make_host_buffer(t->nbytes(), 64);
  std::memcpy(storage->data(), t->data(), t->nbytes());
  auto out = std::make_shared<Tensor>(t->name(), t->dtype(), t->shape(), std::move(storage), 0,
                                      t->nbytes());
  out->set_parts(t->parts());
  return out;
}

// The results of the specs whose tensors `round` gathered, into `results`.
void make_results(WeightLoader& loader, const std::vector<TensorSpec>& specs, const Round& round,
                  const std::shared_ptr<Storage>& buffer, std::vector<TensorRef>& results) {
  std::map<std::string, const PlannedTensor*> planned;
  for (const PlannedTensor& t : round.tensors) planned.emplace(t.name, &t);
  std::vector<TensorSpec> through_loader;
  std::vector<size_t> positions;
  for (size_t i = 0; i < specs.size(); ++i) {
    auto found = planned.find(specs[i].name);
    if (found == planned.end()) continue;
    const PlannedTensor& t = *found->second;
    if (usable_as_stored(specs[i], t.info)) {
      results[i] = std::make_shared<Tensor>(t.name, t.info.dtype, t.info.shape, buffer, t.offset,
                                            t.info.nbytes);
      continue;
    }
    // The owner stays null: the round buffer outlives this load, and no result keeps a view.
    WeightSource gathered = WeightSource::memory(
        {.bytes = std::span<const std::byte>(buffer->data() + t.offset, t.info.nbytes),
         .format = WeightFormat::raw()});
    gathered.format = WeightFormat::raw();
    gathered.raw_layout = RawLayout{.dtype = t.info.dtype, .shape = t.info.shape};
    TensorSpec spec = specs[i];
    spec.name.clear();
    spec.source = std::move(gathered);
    through_loader.push_back(std::move(spec));
    positions.push_back(i);
  }
  if (through_loader.empty()) return;
  std::vector<TensorRef> loaded = loader.load_tensors(std::move(through_loader));
  for (size_t j = 0; j < loaded.size(); ++j) {
    const size_t i = positions[j];
    results[i] = detached(renamed(loaded[j], specs[i].name), *buffer);
  }
}

}  // namespace

CooperativeResult load_cooperative(WeightLoader& loader, Communicator& comm,
                                   const std::vector<TensorSpec>& specs,
                                   const CooperativeOptions& options) {
  const int rank = comm.rank();
  const auto me = static_cast<size_t>(rank);
  WeightSource source;
  Plan plan;
  run_collectively(comm, "planning", [&] {
    source = common_source(specs);
    std::set<std::string> names;
    for (const TensorSpec& spec : specs) names.insert(spec.name);
    plan = distributed::make_plan(loader.get_metadata(source), names, comm.size(),
                                  std::max<uint64_t>(options.round_bytes, 1));
  });
  check_same_plan(comm, plan);

  CooperativeResult result;
  result.tensors.resize(specs.size());
  for (const Round& round : plan.rounds) {
    std::shared_ptr<Storage> buffer;
    run_collectively(comm, "reading", [&] {
      buffer = make_host_buffer(std::max<uint64_t>(round.nbytes, 1), 64);
      result.storage_bytes += read_pieces(loader, source, round.pieces[me], buffer->data());
    });
    comm.allgatherv_in_place(std::span(buffer->data(), round.nbytes), round.part_sizes,
                             round.part_offsets);
    result.received_bytes += round.nbytes - round.part_sizes[me];
    ++result.rounds;
    run_collectively(comm, "transforming",
                     [&] { make_results(loader, specs, round, buffer, result.tensors); });
  }
  return result;
}

}  // namespace ballast
