// Cooperative loads into device memory under a real mpirun (ranks of
// tests/support/cooperative_device_rank). On the CPU, the host-memory device backend stands in
// for cuda:0 and the ranks exchange its memory over MPI, so load_cooperative's device routing
// (device round buffers, uploads of each rank's part, device results, shards received alone)
// gives the bytes of a one-process load, a rank that keeps shards receives no more than them,
// and a spec it cannot serve on a device fails every rank with `unsupported`. On a machine with
// GPUs, the NCCL communicator does the same with one rank per GPU (mpirun -np <GPUs>: one GPU
// runs a single rank); without a GPU or NCCL that test skips.
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include <fmt/format.h>

#include "ballast/ballast.hpp"
#include "ballast/cuda.hpp"
#include "ballast/hash.hpp"
#include "ballast/tensor_parallel.hpp"
#include "support/process.hpp"
#include "support/safetensors_writer.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::string checkpoint() {
  return safetensors_file({
      {"a.big", "F32", {256, 1024}, pattern_bytes(256 * 1024 * 4, 1)},
      {"b.mid", "F32", {100, 700}, pattern_bytes(100 * 700 * 4, 2)},
      {"c.bias", "F32", {1024}, pattern_bytes(1024 * 4, 3)},
      {"d.scalar", "F32", {}, pattern_bytes(4, 4)},
      {"e.small", "F16", {3, 5}, pattern_bytes(3 * 5 * 2, 5)},
      {"f.bf16", "BF16", {512, 512}, pattern_bytes(512 * 512 * 2, 6)},
  });
}

// name -> sha256 of a one-process host load, with rank `rank`'s Shard of `dim` when given.
std::map<std::string, std::string> reference(const fs::path& file, std::optional<int> dim, int rank,
                                             int world) {
  auto loader = make_weight_loader();
  std::map<std::string, std::string> out;
  const WeightSource source = WeightSource::file(file);
  for (const auto& [name, info] : loader->get_metadata(source).tensors) {
    TensorSpec spec{.name = name, .source = source};
    if (dim && *dim < static_cast<int>(info.shape.size()))
      spec.transformations.push_back(Shard{.rank = rank, .world = world, .dim = *dim});
    out[name] = sha256_hex(*loader->load_tensor(spec));
  }
  return out;
}

// The stored bytes rank `rank` keeps with shards of `dim`: its chunk of each tensor with more
// than `dim` dimensions, the others whole.
uint64_t kept_bytes(int dim, int rank, int world) {
  const std::map<std::string, std::pair<std::vector<int64_t>, uint64_t>> tensors = {
      {"a.big", {{256, 1024}, 4}}, {"b.mid", {{100, 700}, 4}}, {"c.bias", {{1024}, 4}},
      {"d.scalar", {{}, 4}},       {"e.small", {{3, 5}, 2}},   {"f.bf16", {{512, 512}, 2}}};
  uint64_t kept = 0;
  for (const auto& [name, t] : tensors) {
    const auto& [shape, element] = t;
    uint64_t n = element;
    for (size_t i = 0; i < shape.size(); ++i) {
      const bool cut = static_cast<int>(i) == dim;
      const ChunkRange c = chunk_range(shape[i], rank, world);
      n *= static_cast<uint64_t>(cut ? c.end - c.start : shape[i]);
    }
    kept += n;
  }
  return kept;
}

class CooperativeDevice : public ::testing::Test {
 protected:
  void SetUp() override {
#ifndef BALLAST_DEVICE_RANK
    BALLAST_MISSING("ballast was built without MPI (apt-get install libopenmpi-dev)");
#else
    if (run_command("command -v mpirun").exit_code != 0)
      BALLAST_MISSING("mpirun is not installed (apt-get install openmpi-bin)");
#endif
    write_file(dir_ / "model.safetensors", checkpoint());
  }

  // Runs `ranks` ranks of cooperative_device_rank; returns each rank's report.
  std::vector<json> run(const std::string& mode, int ranks, const std::string& args = "") {
#ifdef BALLAST_DEVICE_RANK
    const fs::path out = dir_ / fmt::format("out-{}", ++runs_);
    fs::create_directories(out);
    const CommandResult r = run_command(fmt::format(
        "timeout 120 mpirun --allow-run-as-root --oversubscribe --bind-to none -np {} {} {} {} "
        "{} {}",
        ranks, shell_quote(BALLAST_DEVICE_RANK), mode,
        shell_quote((dir_ / "model.safetensors").string()), shell_quote(out.string()), args));
    EXPECT_NE(r.exit_code, 124) << "mpirun hung";
    std::vector<json> reports;
    for (int rank = 0; rank < ranks; ++rank) {
      std::ifstream in(out / fmt::format("rank{}.json", rank));
      EXPECT_TRUE(in.good()) << "rank " << rank << " wrote no report: " << r.err << r.out;
      reports.push_back(in.good() ? json::parse(in) : json::object());
    }
    return reports;
#else
    (void)mode, (void)ranks, (void)args;
    return {};
#endif
  }

  // Every rank ends with the bytes of a one-process load (its shard of `dim` when given) and,
  // with shards, receives no more than it keeps.
  void expect_like_one_process(const std::string& mode, int ranks, std::optional<int> dim) {
    SCOPED_TRACE(fmt::format("{} ranks, shard dim {}", ranks, dim ? *dim : -1));
    const std::string args = dim ? fmt::format("--shard {}", *dim) : "";
    for (const json& report : run(mode, ranks, args)) {
      ASSERT_FALSE(report.contains("error")) << report.dump();
      const int rank = report.at("rank");
      const auto expected = reference(dir_ / "model.safetensors", dim, rank, ranks);
      std::map<std::string, std::string> got;
      for (const auto& [name, hash] : report.at("tensors").items()) got[name] = hash;
      EXPECT_EQ(got, expected);
      if (dim) {
        EXPECT_LE(report.at("received_bytes").get<uint64_t>(), kept_bytes(*dim, rank, ranks));
      }
    }
  }

  TempDir dir_;
  int runs_ = 0;
};

TEST_F(CooperativeDevice, HostBackendRanksEndWithTheTensorsInDeviceMemory) {
  for (const int ranks : {1, 2, 4}) expect_like_one_process("host", ranks, std::nullopt);
}

TEST_F(CooperativeDevice, HostBackendRanksReceiveOnlyTheirShards) {
  for (const int ranks : {2, 4}) {
    expect_like_one_process("host", ranks, 0);
    expect_like_one_process("host", ranks, 1);
  }
}

TEST_F(CooperativeDevice, StepsTheDeviceCannotTakeFailEveryRankAsUnsupported) {
  for (const json& report : run("host", 2, "--shard 0 --cast f16")) {
    ASSERT_TRUE(report.contains("error")) << report.dump();
    const std::string error = report.at("error");
    EXPECT_NE(error.find("unsupported"), std::string::npos) << error;
    EXPECT_NE(error.find("failed on rank 0 of 2"), std::string::npos) << error;
    EXPECT_NE(error.find("cuda:0"), std::string::npos) << error;
  }
}

// One rank per GPU: on a machine with one GPU this is a single rank (-np 1), which still goes
// through NCCL (its communicator of one) and the device round buffers.
TEST_F(CooperativeDevice, NcclRanksOnTheirGpusEndWithTheTensorsOfOneProcess) {
#ifndef BALLAST_HAVE_NCCL
  GTEST_SKIP() << "ballast was built without NCCL (BALLAST_NCCL needs CUDA and NCCL)";
#endif
  const int gpus = cuda_device_count();
  if (gpus == 0) GTEST_SKIP() << "no CUDA device here: the NCCL cooperative load needs a GPU";
  expect_like_one_process("nccl", gpus, std::nullopt);
  expect_like_one_process("nccl", gpus, 0);
  expect_like_one_process("nccl", gpus, 1);
}

}  // namespace
}  // namespace ballast::test
