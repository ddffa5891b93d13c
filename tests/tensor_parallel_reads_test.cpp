// Tensor-parallel shards read only their bytes: counted through a ByteSource wrapper on the
// read path (a row shard is one read, a column shard one read per row run, narrow rows
// coalesced into one read) and counted in nginx's log for an HTTP source without caching
// (1/world of the tensor plus the header). Also planned_reads, chunk_range / chunk_owner, the
// shard:... syntax and the planner's refusals.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>

#include <fmt/format.h>

#include "ballast/ballast.hpp"
#include "loader/materialize.hpp"
#include "support/nginx_server.hpp"
#include "support/safetensors_writer.hpp"
#include "support/test_support.hpp"
#include "transform/plan.hpp"

namespace ballast::test {
namespace {

// Counts what is read from a byte source, which offers no mapping (so every byte is read).
class CountingSource final : public ByteSource {
 public:
  explicit CountingSource(std::vector<std::byte> bytes)
      : inner_(make_memory_source(std::move(bytes), "counted")) {}
  uint64_t size() const override { return inner_->size(); }
  void read_at(uint64_t offset, std::span<std::byte> out) const override {
    reads_ += 1;
    bytes_ += out.size();
    inner_->read_at(offset, out);
  }
  const std::string& name() const override { return inner_->name(); }
  uint64_t reads() const { return reads_; }
  uint64_t bytes() const { return bytes_; }
  void reset() const { reads_ = bytes_ = 0; }

 private:
  std::shared_ptr<ByteSource> inner_;
  mutable std::atomic<uint64_t> reads_{0}, bytes_{0};
};

// A [rows, columns] f32 tensor "w" whose element (r, c) is r * columns + c.
std::string grid_file(int64_t rows, int64_t columns) {
  std::vector<float> values(static_cast<size_t>(rows * columns));
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i);
  return safetensors_file({{"w", "F32", {rows, columns}, f32_bytes(values)}});
}

std::vector<std::byte> as_bytes(const std::string& s) {
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  return {p, p + s.size()};
}

struct Counted {
  std::shared_ptr<CountingSource> source;
  TensorEntry entry;
};

Counted parse_counted(const std::string& file) {
  auto source = std::make_shared<CountingSource>(as_bytes(file));
  auto parser = find_format_parser(WeightFormat::safetensors());
  Index index = parser->parse(ParseContext{.source = source});
  return {source, index.tensors.at(0)};
}

std::shared_ptr<Tensor> read_shard(const Counted& c, const std::string& steps) {
  const auto parsed = parse_transformations(steps);
  const LoadPlan plan = plan_load(c.entry, parsed);
  c.source->reset();
  return materialize(plan, "w",
                     {.read_mode = ReadMode::read, .host_factory = cpu_tensor_factory().get()});
}

// Element (r, c) of a grid_file tensor.
float at(const Tensor& t, int64_t r, int64_t c) {
  float v;
  std::memcpy(&v, t.bytes().data() + (r * t.shape()[1] + c) * 4, 4);
  return v;
}

TEST(TensorParallelReads, RowShardIsOneReadOfItsRows) {
  const auto c = parse_counted(grid_file(32, 32768));
  const uint64_t tensor_bytes = 32 * 32768 * 4;
  for (int rank = 0; rank < 4; ++rank) {
    auto t = read_shard(c, fmt::format("shard:{}/4:0", rank));
    EXPECT_EQ(c.source->bytes(), tensor_bytes / 4);
    EXPECT_EQ(c.source->reads(), 1u);
    EXPECT_EQ(at(*t, 0, 5), static_cast<float>(rank * 8 * 32768 + 5));
  }
}

TEST(TensorParallelReads, ColumnShardReadsOneRunPerRow) {
  // Rows of 128 KiB: a rank's 32 KiB run per row is 96 KiB from the next, more than the gap
  // worth reading, so each run is its own read.
  const auto c = parse_counted(grid_file(32, 32768));
  for (int rank = 0; rank < 4; ++rank) {
    auto t = read_shard(c, fmt::format("shard:{}/4:1", rank));
    EXPECT_EQ(c.source->bytes(), 32u * 32768 / 4 * 4);
    EXPECT_EQ(c.source->reads(), 32u);
    EXPECT_EQ(t->shape(), (Shape{32, 8192}));
    EXPECT_EQ(at(*t, 3, 7), static_cast<float>(3 * 32768 + rank * 8192 + 7));
  }
}

TEST(TensorParallelReads, NarrowColumnRunsAreCoalesced) {
  // Rows of 1 KiB: the 768-byte gaps are cheaper read than skipped, so one read spans them.
  const auto c = parse_counted(grid_file(4096, 256));
  auto t = read_shard(c, "shard:1/4:1,cast:f16");
  EXPECT_EQ(c.source->reads(), 1u);
  EXPECT_EQ(c.source->bytes(), 4095u * 1024 + 256);
  EXPECT_EQ(t->shape(), (Shape{4096, 64}));
}

TEST(TensorParallelReads, FusedShardReadsOnePiecePerPart) {
  const auto c = parse_counted(grid_file(16, 32768));
  auto t = read_shard(c, "shard:1/2:0:8+4+4");
  EXPECT_EQ(c.source->reads(), 3u);
  EXPECT_EQ(c.source->bytes(), 8u * 32768 * 4);
  ASSERT_EQ(t->shape(), (Shape{8, 32768}));
  const std::vector<int64_t> source_rows = {4, 5, 6, 7, 10, 11, 14, 15};
  for (int64_t row = 0; row < 8; ++row)
    EXPECT_EQ(at(*t, row, 0), static_cast<float>(source_rows[row] * 32768)) << row;
}

TEST(TensorParallelReads, PlannedReadsAreTheRanksRanges) {
  const Shard column{.rank = 1, .world = 4, .dim = 1};
  auto ranges = planned_reads(DType::f32, {32, 32768}, std::vector<Transformation>{column});
  ASSERT_EQ(ranges.size(), 32u);
  EXPECT_EQ(ranges[2].offset, 2u * 131072 + 32768);
  EXPECT_EQ(ranges[2].nbytes, 32768u);
  auto rows = planned_reads(DType::f32, {10, 6}, std::vector<Transformation>{Shard{3, 4, 0}});
  ASSERT_EQ(rows.size(), 1u);  // torch.chunk(10 rows, 4): 3, 3, 3, 1
  EXPECT_EQ(rows[0].offset, 9u * 24);
  EXPECT_EQ(rows[0].nbytes, 24u);
  auto none = planned_reads(DType::f32, {2, 6}, std::vector<Transformation>{Shard{3, 4, 0}});
  EXPECT_TRUE(none.empty());
  auto fused =
      planned_reads(DType::bf16, {16, 8}, std::vector<Transformation>{Shard{0, 2, 0, {8, 4, 4}}});
  ASSERT_EQ(fused.size(), 3u);
  EXPECT_EQ(fused[1].offset, 8u * 16);
  EXPECT_EQ(fused[1].nbytes, 2u * 16);
}

TEST(TensorParallelReads, ChunkRangesFollowTorchChunk) {
  const std::vector<std::pair<int64_t, int64_t>> ten_by_four = {{0, 3}, {3, 6}, {6, 9}, {9, 10}};
  for (int r = 0; r < 4; ++r) {
    const ChunkRange c = chunk_range(10, r, 4);
    EXPECT_EQ(std::make_pair(c.start, c.end), ten_by_four[r]);
  }
  EXPECT_EQ(chunk_range(5, 3, 4).end - chunk_range(5, 3, 4).start, 0);  // 2, 2, 1, 0
  EXPECT_EQ(chunk_range(0, 0, 3).end, 0);
  // MoE: 5 stacked experts on 4 ranks are chunks of 2.
  EXPECT_EQ(chunk_owner(0, 5, 4), 0);
  EXPECT_EQ(chunk_owner(3, 5, 4), 1);
  EXPECT_EQ(chunk_owner(4, 5, 4), 2);
  EXPECT_EQ(error_code_of([] { chunk_owner(5, 5, 4); }, "index past the extent"),
            ErrorCode::invalid_argument);
}

TEST(TensorParallelReads, SyntaxRoundTripsAndRefusesBadSteps) {
  for (const char* text : {"shard:1/4:0", "shard:0/2:-1", "shard:2/3:0:8+4+4"})
    EXPECT_EQ(to_string(parse_transformations(text).at(0)), text);
  EXPECT_EQ(to_string(parse_transformations("shard:1/2").at(0)), "shard:1/2:0");
  for (const char* bad : {"shard:4/4:0", "shard:1/0", "shard:-1/2", "shard:a/2", "shard:1:2",
                          "shard:1/2:0:4+", "shard:1/2:0:1:2", "shard"})
    EXPECT_EQ(error_code_of([&] { parse_transformations(bad); }, bad), ErrorCode::invalid_argument)
        << bad;
  TensorEntry entry{.name = "w", .dtype = DType::f32, .shape = {16, 6}};
  auto code = [&](const std::string& steps) {
    return error_code_of([&] { plan_load(entry, parse_transformations(steps)); }, steps);
  };
  EXPECT_EQ(code("shard:0/2:0:8+4"), ErrorCode::shape_mismatch);
  EXPECT_EQ(code("shard:0/2:2"), ErrorCode::shape_mismatch);
  EXPECT_EQ(code("shard:0/2:0:8+4+4,transpose:0:1"), ErrorCode::unsupported);
  EXPECT_EQ(plan_load(entry, parse_transformations("shard:0/2:0:8+4+4,cast:f16")).out_shape,
            (Shape{8, 6}));
}

NginxServer& server() { return process_wide<NginxServer>(); }

// A rank loading its shard over HTTP, without a cache, fetches the header and its 1/world of
// the tensor: one range for a row shard, one per row for a column shard (rows of 256 KiB, so
// that with 2 and 4 ranks the gaps between a rank's runs exceed the 64 KiB worth reading).
TEST(TensorParallelReads, HttpRankFetchesOnlyItsBytes) {
  BALLAST_REQUIRE_NGINX(server());
  const std::string file = grid_file(32, 65536);
  const uint64_t tensor_bytes = 32 * 65536 * 4;
  write_file(server().files() / "tp.safetensors", file);
  WeightLoaderConfig config;
  config.enable_caching = false;
  config.download_timeout_seconds = 10;
  config.download_retries = 1;
  const auto source = WeightSource::url(server().url("files/tp.safetensors"));
  for (const int world : {1, 2, 4})
    for (const int dim : {0, 1})
      for (int rank = 0; rank < world; ++rank) {
        SCOPED_TRACE(fmt::format("world {} dim {} rank {}", world, dim, rank));
        auto loader = make_weight_loader(config);
        server().clear_log();
        (void)loader->get_metadata(source);
        const uint64_t header = server().settled_body_bytes();
        auto t =
            loader->load_tensor(TensorSpec{.name = "w",
                                           .source = source,
                                           .transformations = parse_transformations(
                                               fmt::format("shard:{}/{}:{}", rank, world, dim))});
        const uint64_t shard_bytes = server().settled_body_bytes() - header;
        EXPECT_EQ(shard_bytes, tensor_bytes / world);
        EXPECT_LT(header, uint64_t{8192});
        const int64_t rows = 32 / world, columns = 65536 / world;
        EXPECT_EQ(at(*t, 1, 2), dim == 0 ? static_cast<float>((rank * rows + 1) * 65536 + 2)
                                         : static_cast<float>(65536 + rank * columns + 2));
        RecordProperty(fmt::format("bytes_world{}_dim{}_rank{}", world, dim, rank),
                       std::to_string(header + shard_bytes));
      }
}

}  // namespace
}  // namespace ballast::test
