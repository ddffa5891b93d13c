// Executes load plans (see materialize.hpp).
#include "loader/materialize.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "io/file_source.hpp"
#include "loader/strided_gather.hpp"
#include "loader/view_reads.hpp"
#include "transform/cast.hpp"
#include "transform/quantize/quantize.hpp"
#include "util/checked.hpp"
#include "util/parallel_for.hpp"

namespace ballast {
namespace {

// Elements per value-step block: a multiple of every dtype block size (2, 4, 32, 256).
constexpr uint64_t kBlockElements = 64 * 1024;
// Blocks per parallel piece of a tensor with value steps.
constexpr uint64_t kBlocksPerPiece = 16;

class MappedFileStorage final : public Storage {
 public:
  explicit MappedFileStorage(std::shared_ptr<const MappedRegion> region)
      : region_(std::move(region)) {}
  StorageKind kind() const override { return StorageKind::mapped_file; }
  // Writing through the pointer is allowed only when the region is writable().
  std::byte* data() const override { return const_cast<std::byte*>(region_->data()); }
  uint64_t size() const override { return region_->size(); }
  bool writable() const override { return region_->writable(); }

 private:
  std::shared_ptr<const MappedRegion> region_;
};

void byteswap_elements(std::byte* data, size_t n, DType dtype) {
  size_t unit = dtype_element_size(dtype);
  if (dtype_info(dtype).kind == DTypeKind::complex) {
    unit /= 2;
    n *= 2;
  }
  if (unit <= 1) return;
  for (size_t i = 0; i < n; ++i) std::reverse(data + i * unit, data + (i + 1) * unit);
}

bool needs_byteswap(const View& view) {
  return view.byte_order == ByteOrder::big && dtype_element_size(view.dtype) > 1;
}

// Applies the value steps to one block, ping-ponging between two scratch buffers.
class StepRunner {
 public:
  explicit StepRunner(const LoadPlan& plan) : plan_(plan) {}

  void run(std::byte* stored, uint64_t count, std::byte* out) {
    std::byte* current = stored;
    for (size_t i = 0; i < plan_.steps.size(); ++i) {
      const ValueStep& step = plan_.steps[i];
      const bool last = i + 1 == plan_.steps.size();
      if (step.kind == ValueStep::Kind::scale) {
        scale_elements(step.from, current, count, step.factor);
        if (last) std::memcpy(out, current, *dtype_bytes_for(step.to, count));
        continue;
      }
      std::byte* target = last ? out : scratch_for(current, *dtype_bytes_for(step.to, count));
      cast_elements(step.from, current, step.to, target, count);
      current = target;
    }
  }

 private:
  std::byte* scratch_for(const std::byte* avoid, uint64_t bytes) {
    auto& buffer = (avoid == a_.data()) ? b_ : a_;
    if (buffer.size() < bytes) buffer.resize(bytes);
    return buffer.data();
  }

  const LoadPlan& plan_;
  std::vector<std::byte> a_, b_;
};

bool aligned_for(uint64_t address, DType dtype) {
  uint64_t align = std::min<uint64_t>(std::max<uint32_t>(dtype_element_size(dtype), 1), 8);
  return address % align == 0;
}

// Maps every page of a zero-copy view now, reading one byte per page, as llama.cpp's mmap
// prefetch does, so that the consumer's first pass does not take the page faults on one thread:
// a large view is faulted in pieces by the calling thread and the pool's idle workers, and a
// batch's views in parallel anyway. (madvise(MADV_POPULATE_READ) measured no faster than these
// faults here; the kernel maps a few pages around each.)
void prefault(const std::byte* data, uint64_t n, const ReadEngineOptions& io) {
  constexpr uint64_t kPage = 4096;
  constexpr uint64_t kPiece = 1 << 20;
  const auto* bytes = reinterpret_cast<const volatile std::byte*>(data);
  parallel_for(io.pool, io.helpers, (n + kPiece - 1) / kPiece, [&](size_t piece) {
    const uint64_t end = std::min(n, (piece + 1) * kPiece);
    for (uint64_t i = piece * kPiece; i < end; i += kPage) (void)bytes[i];
  });
}

std::shared_ptr<Tensor> zero_copy(const LoadPlan& plan, const std::string& name,
                                  const std::shared_ptr<const MappedRegion>& region,
                                  const ReadEngineOptions& io) {
  prefault(region->data() + plan.view.offset, plan.out_nbytes, io);
  auto storage = std::make_shared<MappedFileStorage>(region);
  return std::make_shared<Tensor>(name, plan.out_dtype, plan.out_shape, storage, plan.view.offset,
                                  plan.out_nbytes);
}

// The view's elements as they lie in a dense row-major buffer at offset 0.
View dense_view(const View& view) {
  View dense = view;
  dense.offset = 0;
  dense.strides.assign(view.shape.size(), 1);
  for (size_t d = view.shape.size(); d-- > 1;)
    dense.strides[d - 1] = dense.strides[d] * view.shape[d];
  return dense;
}

// Row runs of a strided view are read in ranges of at most this thread's staging share.
CoalesceLimits run_limits(const ReadEngineOptions& io) {
  CoalesceLimits limits;
  limits.max_span_bytes = std::max<uint64_t>(io.staging_bytes_per_thread, 1);
  return limits;
}

// Writes a fused Shard's pieces, concatenated along plan.concat_dim, densely into dst (their
// stored bytes, before value steps): for each index of the dimensions before it, each piece's
// slab in piece order. Pieces are read from `memory` (the source mapped) or else each through
// its own reads: a contiguous piece straight from the source, a strided one by its row runs.
void assemble_pieces(const LoadPlan& plan, const std::byte* memory, std::byte* dst,
                     const ReadEngineOptions& io) {
  uint64_t outer = 1;
  for (int d = 0; d < plan.concat_dim; ++d) outer *= static_cast<uint64_t>(plan.view.shape[d]);
  if (plan.view.numel() == 0) return;
  std::vector<View> views;
  std::vector<std::unique_ptr<std::byte[]>> compact;
  views.reserve(plan.pieces.size());
  for (const View& piece : plan.pieces) {
    if (memory || piece.is_contiguous()) {
      views.push_back(piece);
      continue;
    }
    compact.push_back(
        std::make_unique_for_overwrite<std::byte[]>(*dtype_bytes_for(piece.dtype, piece.numel())));
    read_view_runs(piece, compact.back().get(), run_limits(io), io);
    views.push_back(dense_view(piece));
  }
  if (!memory && outer == 1 && compact.empty()) {  // whole contiguous pieces, read in order
    for (const View& piece : views) {
      const uint64_t n = *dtype_bytes_for(piece.dtype, piece.numel());
      read_into(*piece.data, piece.offset, {dst, n}, io);
      dst += n;
    }
    return;
  }
  std::vector<StridedGather> gathers;
  for (size_t i = 0, c = 0; i < views.size(); ++i)
    gathers.emplace_back(views[i], memory                           ? memory
                                   : plan.pieces[i].is_contiguous() ? nullptr
                                                                    : compact[c++].get());
  for (uint64_t o = 0; o < outer; ++o)
    for (size_t i = 0; i < views.size(); ++i) {
      const uint64_t slab = views[i].numel() / outer;
      gathers[i].gather(o * slab, slab, dst);
      dst += *dtype_bytes_for(views[i].dtype, slab);
    }
}

std::shared_ptr<Tensor> materialize_dense(const LoadPlan& plan, const std::string& name,
                                          const MaterializeOptions& options) {
  const View& view = plan.view;
  const bool swap = needs_byteswap(view);
  std::shared_ptr<const MappedRegion> region = options.mapping;
  if (can_view_without_copy(plan, region.get())) return zero_copy(plan, name, region, options.io);
  if (options.read_mode == ReadMode::mmap && !region && plan.out_nbytes > 0 && plan.steps.empty() &&
      !swap && view.is_contiguous())
    throw Error(ErrorCode::unsupported, "mmap mode was requested but this source cannot be mapped",
                {.source = view.data->name(), .tensor = name});

  auto storage = options.host_factory->allocate(plan.out_nbytes, options.alignment);
  std::byte* out = storage->data();
  const uint64_t numel = view.numel();

  // A fused shard's pieces, and a strided view whose rows are runs (a column slice) that
  // cannot be read through a mapping, are first made dense: straight into the output when no
  // value step follows, else into a staged copy the steps then read.
  const std::byte* memory = region ? region->data() : nullptr;
  std::unique_ptr<std::byte[]> staged;
  View local = view;
  const bool fused = !plan.pieces.empty();
  if (fused || (!memory && !view.is_contiguous() && numel > 0 && readable_by_runs(view))) {
    std::byte* dense = out;
    if (!plan.steps.empty()) {
      staged = std::make_unique_for_overwrite<std::byte[]>(*dtype_bytes_for(view.dtype, numel));
      dense = staged.get();
    }
    if (fused)
      assemble_pieces(plan, memory, dense, options.io);
    else
      read_view_runs(view, dense, run_limits(options.io), options.io);
    if (plan.steps.empty()) {
      if (swap) byteswap_elements(out, numel, view.dtype);
      return std::make_shared<Tensor>(name, plan.out_dtype, plan.out_shape, storage, 0,
                                      plan.out_nbytes);
    }
    local = dense_view(view);
    memory = staged.get();
  }
  // Other strided views (transposes) read through the mapping, or through one staged copy of
  // the bytes they span when it fits this thread's staging share, or else through a temporary
  // mapping of the local file; only a large one of a network source is staged beyond the share.
  if (!memory && !view.is_contiguous() && numel > 0) {
    uint64_t last = 0;
    for (size_t d = 0; d < view.shape.size(); ++d)
      last += static_cast<uint64_t>(view.shape[d] - 1) * static_cast<uint64_t>(view.strides[d]);
    const uint64_t span = (last + 1) * dtype_element_size(view.dtype);
    auto file = local_file_of(*view.data, false);
    if (span > options.io.staging_bytes_per_thread && file) region = map_local_file(*file);
    if (region) {
      memory = region->data();
    } else {
      staged = std::make_unique_for_overwrite<std::byte[]>(span);
      read_into(*view.data, view.offset, {staged.get(), span}, options.io);
      memory = staged.get();
      local.offset = 0;
    }
  }
  StridedGather gatherer(local, memory);

  if (plan.steps.empty()) {
    if (!memory && view.is_contiguous())
      read_into(*view.data, view.offset, {out, plan.out_nbytes}, options.io);
    else
      gatherer.gather(0, numel, out);
    if (swap) byteswap_elements(out, numel, view.dtype);
  } else {
    // Pieces of a few blocks run in parallel, each with its own scratch.
    const uint64_t block = gatherer.block_elements(kBlockElements);
    const uint64_t piece = block * kBlocksPerPiece;
    parallel_for(options.io.pool, options.io.helpers, (numel + piece - 1) / piece, [&](size_t p) {
      const uint64_t begin = p * piece, end = std::min(numel, begin + piece);
      std::vector<std::byte> stored(*dtype_bytes_for(view.dtype, block));
      StepRunner runner(plan);
      for (uint64_t first = begin; first < end; first += block) {
        const uint64_t count = std::min(block, end - first);
        gatherer.gather(first, count, stored.data());
        if (swap) byteswap_elements(stored.data(), count, view.dtype);
        runner.run(stored.data(), count, out + *dtype_bytes_for(plan.out_dtype, first));
      }
    });
  }
  return std::make_shared<Tensor>(name, plan.out_dtype, plan.out_shape, storage, 0,
                                  plan.out_nbytes);
}

}  // namespace

std::shared_ptr<const MappedRegion> mapping_for(const LoadPlan& plan, ReadMode mode) {
  if (mode != ReadMode::automatic && mode != ReadMode::mmap) return nullptr;
  return plan.view.data->mapping();
}

bool is_plain_owned_read(const LoadPlan& plan, ReadMode mode, const MappedRegion* mapping) {
  const View& view = plan.view;
  if (!plan.pieces.empty() || plan.quantize || !plan.steps.empty() || !view.is_contiguous() ||
      plan.out_nbytes == 0 || needs_byteswap(view) || mode == ReadMode::mmap)
    return false;
  return mode != ReadMode::automatic || mapping == nullptr;
}

bool can_view_without_copy(const LoadPlan& plan, const MappedRegion* region) {
  const View& view = plan.view;
  return region && plan.pieces.empty() && plan.steps.empty() && !needs_byteswap(view) &&
         view.is_contiguous() && plan.out_nbytes > 0 &&
         aligned_for(reinterpret_cast<uintptr_t>(region->data()) + view.offset, view.dtype);
}

bool fills_one_owned_buffer(const LoadPlan& plan, const MappedRegion* mapping) {
  return !plan.quantize && !can_view_without_copy(plan, mapping);
}

std::shared_ptr<Tensor> materialize(const LoadPlan& plan, const std::string& name,
                                    const MaterializeOptions& options) {
  auto dense = materialize_dense(plan, name, options);
  if (!plan.quantize) return dense;
  return quantize_weight(*dense, *plan.quantize, name, *options.host_factory, options.alignment);
}

}  // namespace ballast
