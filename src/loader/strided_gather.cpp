// Strided element gathering (see strided_gather.hpp).
#include "loader/strided_gather.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "ballast/dtype.hpp"

namespace ballast {
namespace {

// A tile is kLineBytes / element-size rows by as many columns: for a transpose, one cache line
// of source per column and one line of output per row, each used whole while the tile runs.
constexpr uint64_t kLineBytes = 64;
// Blocks of more elements than this keep the caller's block size, row seams and all.
constexpr uint64_t kMaxBlockElements = uint64_t{1} << 22;

uint64_t tile_edge(uint64_t element_size) {
  return std::max<uint64_t>(kLineBytes / element_size, 1);
}

// Tiles are visited in square panels of this many rows and columns, so that the source and
// output lines a panel touches (a few hundred KiB at most) stay in L2 between its tiles even
// when rows are a power-of-two number of bytes apart and so share cache sets.
uint64_t panel_edge(uint64_t element_size) { return tile_edge(element_size) * 8; }

// One tile: `rows` output rows (source element offsets `bases`) by `columns` columns starting at
// innermost index `first_column`, written to `dst` whose rows are `row_elements` apart.
template <size_t Size>
void copy_tile(const std::byte* src, const uint64_t* bases, uint64_t rows, uint64_t first_column,
               uint64_t columns, uint64_t stride, uint64_t row_elements, std::byte* dst) {
  for (uint64_t t = 0; t < rows; ++t) {
    const std::byte* from = src + (bases[t] + first_column * stride) * Size;
    std::byte* to = dst + (t * row_elements + first_column) * Size;
    for (uint64_t c = 0; c < columns; ++c)
      std::memcpy(to + c * Size, from + c * stride * Size, Size);
  }
}

}  // namespace

StridedGather::StridedGather(const View& view, const std::byte* memory)
    : view_(view), memory_(memory), element_size_(dtype_element_size(view.dtype)) {}

void StridedGather::gather(uint64_t first, uint64_t count, std::byte* dst) const {
  if (count == 0) return;
  if (view_.is_contiguous()) {
    copy_bytes(view_.offset + *dtype_bytes_for(view_.dtype, first),
               *dtype_bytes_for(view_.dtype, count), dst);
    return;
  }
  const uint64_t columns = static_cast<uint64_t>(view_.shape.back());
  if (view_.strides.back() == 1 || memory_ == nullptr || columns == 0 || !tiled_size()) {
    gather_by_runs(first, count, dst);
    return;
  }
  // A partial first row, whole rows in tiles, a partial last row.
  const uint64_t head = std::min(count, (columns - first % columns) % columns);
  gather_by_runs(first, head, dst);
  const uint64_t rows = (count - head) / columns;
  gather_row_tiles((first + head) / columns, rows, dst + head * element_size_);
  const uint64_t done = head + rows * columns;
  gather_by_runs(first + done, count - done, dst + done * element_size_);
}

// Walks a multi-index; the innermost dimension moves in runs (one copy per run when its stride
// is 1, one per element otherwise).
void StridedGather::gather_by_runs(uint64_t first, uint64_t count, std::byte* dst) const {
  if (count == 0) return;
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
    const uint64_t run =
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

uint64_t StridedGather::row_offset(uint64_t row) const {
  int64_t element = 0;
  for (size_t d = view_.shape.size() - 1; d-- > 0;) {
    const auto extent = static_cast<uint64_t>(view_.shape[d]);
    element += static_cast<int64_t>(row % extent) * view_.strides[d];
    row /= extent;
  }
  return static_cast<uint64_t>(element);
}

void StridedGather::gather_row_tiles(uint64_t first_row, uint64_t rows, std::byte* dst) const {
  const uint64_t columns = static_cast<uint64_t>(view_.shape.back());
  const auto stride = static_cast<uint64_t>(view_.strides.back());
  const uint64_t edge = tile_edge(element_size_);
  const uint64_t panel = panel_edge(element_size_);
  const std::byte* src = memory_ + view_.offset;
  std::vector<uint64_t> bases(panel);
  for (uint64_t p = 0; p < rows; p += panel) {
    const uint64_t panel_rows = std::min(panel, rows - p);
    for (uint64_t t = 0; t < panel_rows; ++t) bases[t] = row_offset(first_row + p + t);
    for (uint64_t pc = 0; pc < columns; pc += panel) {
      const uint64_t panel_columns = std::min(panel, columns - pc);
      for (uint64_t r = 0; r < panel_rows; r += edge) {
        const uint64_t n = std::min(edge, panel_rows - r);
        std::byte* out = dst + (p + r) * columns * element_size_;
        for (uint64_t c = pc; c < pc + panel_columns; c += edge) {
          const uint64_t m = std::min(edge, pc + panel_columns - c);
          const uint64_t* b = bases.data() + r;
          switch (element_size_) {
            case 1: copy_tile<1>(src, b, n, c, m, stride, columns, out); break;
            case 2: copy_tile<2>(src, b, n, c, m, stride, columns, out); break;
            case 4: copy_tile<4>(src, b, n, c, m, stride, columns, out); break;
            case 8: copy_tile<8>(src, b, n, c, m, stride, columns, out); break;
            case 16: copy_tile<16>(src, b, n, c, m, stride, columns, out); break;
          }
        }
      }
    }
  }
}

uint64_t StridedGather::block_elements(uint64_t preferred) const {
  if (view_.is_contiguous() || view_.strides.back() == 1 || memory_ == nullptr || !tiled_size())
    return preferred;
  const uint64_t tile_rows = panel_edge(element_size_) * static_cast<uint64_t>(view_.shape.back());
  if (tile_rows == 0 || tile_rows > kMaxBlockElements) return preferred;
  return (preferred + tile_rows - 1) / tile_rows * tile_rows;
}

bool StridedGather::tiled_size() const {
  return element_size_ == 1 || element_size_ == 2 || element_size_ == 4 || element_size_ == 8 ||
         element_size_ == 16;
}

void StridedGather::copy_bytes(uint64_t offset, uint64_t n, std::byte* dst) const {
  if (memory_ != nullptr)
    std::memcpy(dst, memory_ + offset, n);
  else
    view_.data->read_at(offset, std::span<std::byte>(dst, n));
}

}  // namespace ballast
