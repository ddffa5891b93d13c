// How a batch is read (see batch_plan.hpp).
#include "loader/batch_plan.hpp"

#include <algorithm>

#include "core/produced_mapping.hpp"
#include "io/direct_sweep.hpp"
#include "loader/materialize.hpp"
#include "util/checked.hpp"

namespace ballast {
namespace {

// Points the large owned host tensors of a batch that would each get a buffer of the default
// host factory at one arena sized for all of them (see batch_arena.hpp). Null, and nothing
// changed, for fewer than two such tensors or when the kernel refuses the reservation.
std::shared_ptr<BatchArena> place_in_one_arena(std::vector<PreparedLoad>& prepared,
                                               size_t alignment) {
  const TensorFactory* host = cpu_tensor_factory().get();
  std::vector<PreparedLoad*> placed;
  uint64_t capacity = 0;
  for (PreparedLoad& p : prepared) {
    if (!p.device.is_host() || p.device_factory != host || p.plan.out_nbytes < kArenaMinimumBytes ||
        !fills_one_owned_buffer(p.plan, p.mapping.get()))
      continue;
    // Room for the tensor at any alignment offset. A batch whose sizes do not add up in 64
    // bits (only hostile headers claim that much) is left to fail tensor by tensor.
    auto room = checked_add(p.plan.out_nbytes, alignment);
    auto total = room ? checked_add(capacity, *room) : std::nullopt;
    if (!total) return nullptr;
    capacity = *total;
    placed.push_back(&p);
  }
  if (placed.size() < 2) return nullptr;
  auto arena = BatchArena::reserve(capacity);
  if (!arena) return nullptr;
  for (PreparedLoad* p : placed) p->device_factory = arena.get();
  return arena;
}

// Small host tensors whose reads cost a round trip each: not from a local file, from memory
// or from an inflated zip member (see coalesced_reads.hpp).
bool coalescible(const PreparedLoad& p, ReadMode read_mode) {
  const ByteSource& data = *p.plan.view.data;
  return p.device.is_host() && is_plain_owned_read(p.plan, read_mode, p.mapping.get()) &&
         !local_file_of(data, false) && !mapping_produces_bytes(data) && !data.mapping();
}

// With O_DIRECT, the plain host reads from one local file are one sweep; read tensor by
// tensor, every tensor's end would drain the device's queue.
std::map<int, FileSweep> plan_sweeps(const std::vector<PreparedLoad>& prepared,
                                     ReadMode read_mode) {
  std::map<int, FileSweep> sweeps;
  if (read_mode != ReadMode::direct) return sweeps;
  for (size_t i = 0; i < prepared.size(); ++i) {
    const PreparedLoad& p = prepared[i];
    const View& view = p.plan.view;
    if (!p.device.is_host() || !is_plain_owned_read(p.plan, read_mode, p.mapping.get()) ||
        !range_inside(view.offset, p.plan.out_nbytes, view.data->size()))
      continue;
    auto file = local_file_of(*view.data, true);
    if (!file || file->direct_fd < 0) continue;
    FileSweep& sweep = sweeps[file->direct_fd];
    sweep.file = {
        .fd = file->fd, .direct_fd = file->direct_fd, .file_size = file->file_size, .os = file->os};
    sweep.specs.push_back(i);
    sweep.first.push_back(file->base + view.offset);
  }
  return sweeps;
}

}  // namespace

BatchPlan::BatchPlan(std::vector<PreparedLoad>& prepared, const BatchSettings& settings)
    : arena_(place_in_one_arena(prepared, settings.alignment)),
      sweeps_(plan_sweeps(prepared, settings.read_mode)) {
  // A run is staged whole, in this thread's staging share.
  CoalesceLimits limits;
  limits.max_span_bytes = std::min(settings.read_chunk_bytes, settings.staging_bytes_per_thread);
  limits.max_tensor_bytes = std::min(limits.max_tensor_bytes, limits.max_span_bytes);
  std::vector<bool> swept(prepared.size(), false);
  for (const auto& [fd, sweep] : sweeps_) {
    jobs_.push_back({sweep.specs.front(), {}, &sweep});
    for (size_t i : sweep.specs) swept[i] = true;
  }
  for (size_t i = 0; i < prepared.size(); ++i) {
    const LoadPlan& plan = prepared[i].plan;
    if (swept[i]) continue;
    if (plan.out_nbytes <= limits.max_tensor_bytes && coalescible(prepared[i], settings.read_mode))
      small_.push_back({i, plan.view.data.get(), plan.view.offset, plan.out_nbytes});
    else
      jobs_.push_back({i, {}});
  }
  for (auto [begin, end] : coalesce_runs(small_, limits)) {
    const std::span<const SmallRead> run(small_.data() + begin, end - begin);
    const size_t first = std::min_element(run.begin(), run.end(), [](auto& a, auto& b) {
                           return a.index < b.index;
                         })->index;
    jobs_.push_back({first, run.size() > 1 ? run : std::span<const SmallRead>{}});
  }
  std::sort(jobs_.begin(), jobs_.end(),
            [](const BatchJob& a, const BatchJob& b) { return a.first_spec < b.first_spec; });
}

void run_sweep(const FileSweep& sweep, const std::vector<PreparedLoad>& prepared, size_t alignment,
               const ReadEngineOptions& io, const TensorDelivery& deliver) {
  std::vector<DirectRange> ranges;
  std::vector<TensorRef> tensors;
  for (size_t k = 0; k < sweep.specs.size(); ++k) {
    const PreparedLoad& p = prepared[sweep.specs[k]];
    auto storage =
        naming_errors(p, [&] { return p.device_factory->allocate(p.plan.out_nbytes, alignment); });
    ranges.push_back({sweep.first[k], {storage->data(), p.plan.out_nbytes}});
    tensors.push_back(std::make_shared<Tensor>(p.name, p.plan.out_dtype, p.plan.out_shape,
                                               std::move(storage), 0, p.plan.out_nbytes));
  }
  const PreparedLoad& first = prepared[sweep.specs.front()];
  try {
    sweep_direct(sweep.file, ranges,
                 {.staging_bytes_per_thread = io.staging_bytes_per_thread,
                  .pool = io.pool,
                  .helpers = io.helpers},
                 first.plan.view.data->name(),
                 [&](size_t k) { deliver(sweep.specs[k], std::move(tensors[k])); });
  } catch (Error& e) {
    const PreparedLoad* culprit = &first;
    for (size_t k = 0; k < ranges.size() && e.context().offset; ++k)
      if (*e.context().offset - ranges[k].offset < ranges[k].out.size()) {
        culprit = &prepared[sweep.specs[k]];
        break;
      }
    e.with_tensor(culprit->name);
    e.with_source(describe(*culprit->source));
    throw;
  }
}

void run_coalesced(std::span<const SmallRead> run, const std::vector<PreparedLoad>& prepared,
                   size_t alignment, const ReadEngineOptions& io, const TensorDelivery& deliver) {
  std::vector<std::byte*> outputs;
  std::vector<TensorRef> tensors;
  for (const SmallRead& read : run) {
    const PreparedLoad& p = prepared[read.index];
    auto storage = p.device_factory->allocate(p.plan.out_nbytes, alignment);
    outputs.push_back(storage->data());
    tensors.push_back(std::make_shared<Tensor>(p.name, p.plan.out_dtype, p.plan.out_shape, storage,
                                               0, p.plan.out_nbytes));
  }
  naming_errors(prepared[run.front().index], [&] { read_run(run, outputs, io); });
  for (size_t k = 0; k < run.size(); ++k) deliver(run[k].index, std::move(tensors[k]));
}

}  // namespace ballast
