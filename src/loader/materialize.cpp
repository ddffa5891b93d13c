// Executes load plans (see materialize.hpp).
#include "loader/materialize.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "io/file_source.hpp"
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
  // The mapping is read-only; Storage hands out a mutable pointer only for owned buffers.
  std::byte* data() const override { return const_cast<std::byte*>(region_->data()); }
  uint64_t size() const override { return region_->size(); }

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

// Copies logical elements [first, first + count) of a view into dst, in row-major order.
class Gatherer {
 public:
  Gatherer(const View& view, const std::byte* memory) : view_(view), memory_(memory) {
    element_size_ = dtype_element_size(view.dtype);
  }

  void gather(uint64_t first, uint64_t count, std::byte* dst) const {
    if (count == 0) return;
    if (view_.is_contiguous()) {
      uint64_t bytes_before = *dtype_bytes_for(view_.dtype, first);
      uint64_t bytes = *dtype_bytes_for(view_.dtype, count);
      copy_bytes(view_.offset + bytes_before, bytes, dst);
      return;
    }
    // Walk a multi-index; the innermost dimension moves in runs.
    const size_t rank = view_.shape.size();
    std::vector<int64_t> index(rank, 0);
    uint64_t rest = first;
    for (size_t d = rank; d-- > 0;) {
      index[d] = static_cast<int64_t>(rest % static_cast<uint64_t>(view_.shape[d]));
      rest /= static_cast<uint64_t>(view_.shape[d]);
    }
    const int64_t inner = view_.shape[rank - 1];
    const int64_t inner_stride = view_.strides[rank - 1];
    uint64_t done = 0;
    while (done < count) {
      int64_t element = 0;
      for (size_t d = 0; d < rank; ++d) element += index[d] * view_.strides[d];
      uint64_t run =
          std::min<uint64_t>(count - done, static_cast<uint64_t>(inner - index[rank - 1]));
      const uint64_t src = view_.offset + static_cast<uint64_t>(element) * element_size_;
      if (inner_stride == 1) {
        copy_bytes(src, run * element_size_, dst + done * element_size_);
      } else {
        for (uint64_t i = 0; i < run; ++i)
          copy_bytes(src + i * static_cast<uint64_t>(inner_stride) * element_size_, element_size_,
                     dst + (done + i) * element_size_);
      }
      done += run;
      index[rank - 1] += static_cast<int64_t>(run);
      for (size_t d = rank - 1; d > 0 && index[d] == view_.shape[d]; --d) {
        index[d] = 0;
        ++index[d - 1];
      }
    }
  }

 private:
  void copy_bytes(uint64_t offset, uint64_t n, std::byte* dst) const {
    if (memory_ != nullptr)
      std::memcpy(dst, memory_ + offset, n);
    else
      view_.data->read_at(offset, std::span<std::byte>(dst, n));
  }

  const View& view_;
  const std::byte* memory_;  // the whole source in memory, or null to read through the source
  uint64_t element_size_;
};

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

std::shared_ptr<Tensor> zero_copy(const LoadPlan& plan, const std::string& name,
                                  const std::shared_ptr<const MappedRegion>& region) {
  auto storage = std::make_shared<MappedFileStorage>(region);
  return std::make_shared<Tensor>(name, plan.out_dtype, plan.out_shape, storage, plan.view.offset,
                                  plan.out_nbytes);
}

std::shared_ptr<Tensor> materialize_dense(const LoadPlan& plan, const std::string& name,
                                          const MaterializeOptions& options) {
  const View& view = plan.view;
  const bool swap = view.byte_order == ByteOrder::big && dtype_element_size(view.dtype) > 1;
  std::shared_ptr<const MappedRegion> region;
  if (options.read_mode == ReadMode::automatic || options.read_mode == ReadMode::mmap)
    region = view.data->mapping();

  if (region && plan.steps.empty() && !swap && view.is_contiguous() && plan.out_nbytes > 0 &&
      aligned_for(reinterpret_cast<uintptr_t>(region->data()) + view.offset, view.dtype))
    return zero_copy(plan, name, region);
  if (options.read_mode == ReadMode::mmap && !region && plan.out_nbytes > 0 && plan.steps.empty() &&
      !swap && view.is_contiguous())
    throw Error(ErrorCode::unsupported, "mmap mode was requested but this source cannot be mapped",
                {.source = view.data->name(), .tensor = name});

  auto storage = options.host_factory->allocate(plan.out_nbytes, options.alignment);
  std::byte* out = storage->data();
  const uint64_t numel = view.numel();

  // Strided views read through the mapping, or through one staged copy of the bytes they span
  // when it fits this thread's staging share, or else through a temporary mapping of the local
  // file; only a large strided view of a network source is staged beyond the share.
  const std::byte* memory = region ? region->data() : nullptr;
  std::unique_ptr<std::byte[]> staged;
  View local = view;
  if (!memory && !view.is_contiguous() && numel > 0) {
    uint64_t last = 0;
    for (size_t d = 0; d < view.shape.size(); ++d)
      last += static_cast<uint64_t>(view.shape[d] - 1) * static_cast<uint64_t>(view.strides[d]);
    const uint64_t span = (last + 1) * dtype_element_size(view.dtype);
    auto file = view.data->local_file(false);
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
  Gatherer gatherer(local, memory);

  if (plan.steps.empty()) {
    if (!memory && view.is_contiguous())
      read_into(*view.data, view.offset, {out, plan.out_nbytes}, options.io);
    else
      gatherer.gather(0, numel, out);
    if (swap) byteswap_elements(out, numel, view.dtype);
  } else {
    // Pieces of a few blocks run in parallel, each with its own scratch.
    const uint64_t piece = kBlockElements * kBlocksPerPiece;
    parallel_for(options.io.pool, options.io.helpers, (numel + piece - 1) / piece, [&](size_t p) {
      const uint64_t begin = p * piece, end = std::min(numel, begin + piece);
      std::vector<std::byte> stored(*dtype_bytes_for(view.dtype, kBlockElements));
      StepRunner runner(plan);
      for (uint64_t first = begin; first < end; first += kBlockElements) {
        const uint64_t count = std::min(kBlockElements, end - first);
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

std::shared_ptr<Tensor> materialize(const LoadPlan& plan, const std::string& name,
                                    const MaterializeOptions& options) {
  auto dense = materialize_dense(plan, name, options);
  if (!plan.quantize) return dense;
  return quantize_weight(*dense, *plan.quantize, name, *options.host_factory, options.alignment);
}

}  // namespace ballast
