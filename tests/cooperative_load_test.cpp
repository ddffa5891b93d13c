// Cooperative loading under a real mpirun (1, 2 and 4 ranks on this machine, oversubscribed):
// `ballast load --cooperative --json` on each rank reads 1/N of the checkpoint's bytes (within
// a row and the alignment of each cut) and ends with tensors byte-identical to a one-process
// load, in every format; with --shard each rank ends with its tensor-parallel shard, of rows or
// of columns, and receives about that shard's bytes rather than whole tensors; over a
// URL (nginx) and from S3 (moto behind the SigV4 proxy) the server's log shows ranged GETs
// only and the tensor bytes sent once in all, not once per rank; ranks in separate network
// namespaces exchange over veth; and a failure on one rank (a missing file, a hostile file, a
// different checkpoint, a URL that is not there, a connection that breaks off while the rank
// reads) ends every rank with that rank's error instead of a hang; ranks whose copies differ
// (one byte of tensor data, the format metadata) all fail with `integrity` naming the rank, its
// file and the tensor, and every byte is read once more by a rank that checks it. Without a
// GPU, --device cuda fails every rank with `unsupported`.
#include <gtest/gtest.h>

#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <map>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "ballast/ballast.hpp"
#include "ballast/cuda.hpp"
#include "ballast/hash.hpp"
#include "ballast/tensor_parallel.hpp"
#include "support/aws_environment.hpp"
#include "support/nginx_server.hpp"
#include "support/process.hpp"
#include "support/s3_server.hpp"
#include "support/safetensors_writer.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// How far a rank's share may be from total / N: a row of the widest tensor (4 KiB) at each of
// its two cuts, plus the alignment padding of the tensors.
constexpr uint64_t kShareSlack = 2 * 4096 + 8 * 64;

// Tensors of several dtypes and sizes: large ones split by rows, small and 0-d ones whole.
std::string checkpoint(int seed, const nlohmann::json& metadata = nullptr) {
  const std::vector<StTensor> tensors{
      {"a.big", "F32", {256, 1024}, pattern_bytes(256 * 1024 * 4, seed)},
      {"b.mid", "F32", {100, 700}, pattern_bytes(100 * 700 * 4, seed + 1)},
      {"c.bias", "F32", {1024}, pattern_bytes(1024 * 4, seed + 2)},
      {"d.scalar", "F32", {}, pattern_bytes(4, seed + 3)},
      {"e.small", "F16", {3, 5}, pattern_bytes(3 * 5 * 2, seed + 4)},
      {"f.bf16", "BF16", {512, 512}, pattern_bytes(512 * 512 * 2, seed + 5)},
  };
  return safetensors_file(tensors, metadata);
}

uint64_t tensor_bytes() {
  return 256 * 1024 * 4 + 100 * 700 * 4 + 1024 * 4 + 4 + 3 * 5 * 2 + 512 * 512 * 2;
}

// name -> sha256 of a one-process load, each tensor with `steps_of(name)` applied.
std::map<std::string, std::string> reference_hashes(
    const WeightSource& source, const std::function<std::vector<Transformation>(int dims)>& steps) {
  auto loader = make_weight_loader();
  std::map<std::string, std::string> out;
  for (const auto& [name, info] : loader->get_metadata(source).tensors) {
    auto t = loader->load_tensor(
        TensorSpec{.name = name,
                   .source = source,
                   .transformations = steps(static_cast<int>(info.shape.size()))});
    out[name] = sha256_hex(*t);
  }
  return out;
}

std::map<std::string, std::string> hashes_of(const json& report) {
  std::map<std::string, std::string> out;
  for (const auto& [name, info] : report.at("tensors").items()) out[name] = info.at("sha256");
  return out;
}

// LeakSanitizer's settings for a sanitized `ballast` under mpirun: Open MPI's own allocations
// are suppressed by library, which needs the slow unwinder (the fast one stops in Open MPI's
// plugins, whose frames are unknown once they are unloaded).
std::string lsan_environment() {
  const fs::path suppressions = fs::path(BALLAST_SOURCE_DIR) / "tests/support/lsan_mpi.supp";
  return "LSAN_OPTIONS=" +
         shell_quote("suppressions=" + suppressions.string() + ":fast_unwind_on_malloc=0");
}

// mpirun on this machine, each rank running `ballast load --cooperative ARGS` through sh, so
// that ARGS may name a rank's own path with "$OMPI_COMM_WORLD_RANK". A bounded run: a hang
// ends in `timeout` (exit 124). LSan is told about Open MPI's own leaks.
CommandResult mpirun(int ranks, const std::string& args) {
  const std::string rank_command =
      fmt::format("exec {} load --cooperative {}", shell_quote(cli_path()), args);
  return run_command(
      fmt::format("{} timeout 120 mpirun --allow-run-as-root --oversubscribe "
                  "--bind-to none -np {} sh -c {}",
                  lsan_environment(), ranks, shell_quote(rank_command)));
}

// One JSON report per rank, by rank; every rank ran and succeeded.
std::vector<json> reports(int ranks, const std::string& args) {
  const CommandResult r = mpirun(ranks, "--json " + args);
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  std::vector<json> out(static_cast<size_t>(ranks));
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] != '{') continue;
    const json report = json::parse(line);
    EXPECT_EQ(report.at("world"), ranks);
    const auto rank = report.at("rank").get<size_t>();
    out.at(rank) = report;
  }
  for (const json& report : out) EXPECT_FALSE(report.is_null()) << "a rank did not report";
  return out;
}

// Ends the current test (BALLAST_MISSING) without MPI or mpirun.
#ifdef BALLAST_HAVE_MPI
#define BALLAST_REQUIRE_MPI()                                                   \
  do {                                                                          \
    if (run_command("command -v mpirun").exit_code != 0)                        \
      BALLAST_MISSING("mpirun is not installed (apt-get install openmpi-bin)"); \
  } while (0)
#else
#define BALLAST_REQUIRE_MPI() \
  BALLAST_MISSING("ballast was built without MPI (apt-get install libopenmpi-dev)")
#endif

class CooperativeLoad : public ::testing::Test {
 protected:
  void SetUp() override {
    BALLAST_REQUIRE_MPI();
    write_file(dir_ / "model.safetensors", checkpoint(7));
  }

  // Every rank of `ranks` fails with a message naming rank `failing` and `expected`.
  static CommandResult expect_all_fail(int ranks, const std::string& args, int failing,
                                       const std::string& expected) {
    const CommandResult r = mpirun(ranks, args);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.exit_code, 124) << "mpirun hung";
    // Every rank prints the agreed error.
    const std::string agreed = fmt::format("failed on rank {} of {}", failing, ranks);
    size_t count = 0;
    for (size_t at = r.err.find(agreed); at != std::string::npos; at = r.err.find(agreed, at + 1))
      ++count;
    EXPECT_EQ(count, static_cast<size_t>(ranks)) << r.err;
    EXPECT_NE(r.err.find(expected), std::string::npos) << r.err;
    return r;
  }

  TempDir dir_;
};

TEST_F(CooperativeLoad, EachRankReadsItsShareAndEndsWithEveryTensor) {
  const auto expected = reference_hashes(WeightSource::file(dir_ / "model.safetensors"),
                                         [](int) { return std::vector<Transformation>{}; });
  for (const int ranks : {1, 2, 4}) {
    SCOPED_TRACE(fmt::format("{} ranks", ranks));
    uint64_t read = 0, verified = 0;
    for (const json& report : reports(ranks, shell_quote((dir_ / "model.safetensors").string()))) {
      const uint64_t share = tensor_bytes() / static_cast<uint64_t>(ranks);
      const auto mine = report.at("storage_bytes").get<uint64_t>();
      EXPECT_LE(mine, share + kShareSlack);
      EXPECT_GE(mine + kShareSlack, share);
      read += mine;
      verified += report.at("verified_bytes").get<uint64_t>();
      EXPECT_EQ(hashes_of(report), expected);
    }
    EXPECT_EQ(read, tensor_bytes());  // every byte read once, by one rank
    // ... and, with more than one rank, once again by another rank that checks it.
    EXPECT_EQ(verified, ranks > 1 ? tensor_bytes() : 0);
  }
}

TEST_F(CooperativeLoad, SmallRoundsGiveTheSameTensors) {
  const auto expected = reference_hashes(WeightSource::file(dir_ / "model.safetensors"),
                                         [](int) { return std::vector<Transformation>{}; });
  for (const json& report :
       reports(4, "--round-bytes 300000 " + shell_quote((dir_ / "model.safetensors").string()))) {
    EXPECT_EQ(report.at("rounds").get<int>(), 3);  // a.big, b.mid with the small ones, f.bf16
    EXPECT_EQ(hashes_of(report), expected);
  }
}

TEST_F(CooperativeLoad, ShardKeepsEachRanksTensorParallelPart) {
  const auto source = WeightSource::file(dir_ / "model.safetensors");
  for (const json& report :
       reports(2, "--shard --dtype f32 " + shell_quote((dir_ / "model.safetensors").string()))) {
    const int rank = report.at("rank");
    EXPECT_EQ(hashes_of(report), reference_hashes(source, [rank](int dims) {
                std::vector<Transformation> steps;
                if (dims > 0) steps.push_back(Shard{.rank = rank, .world = 2, .dim = 0});
                steps.push_back(Cast{.dtype = DType::f32});
                return steps;
              }));
  }
}

// The stored bytes rank `rank` of `world` keeps of the checkpoint with --shard-dim `dim`: its
// chunk of each tensor with more than `dim` dimensions, the others whole.
uint64_t kept_bytes(const WeightSource& source, int dim, int rank, int world) {
  uint64_t kept = 0;
  for (const auto& [name, info] : make_weight_loader()->get_metadata(source).tensors) {
    if (static_cast<int>(info.shape.size()) <= dim) {
      kept += info.nbytes;
      continue;
    }
    const int64_t extent = info.shape[static_cast<size_t>(dim)];
    const ChunkRange c = chunk_range(extent, rank, world);
    kept += info.nbytes / static_cast<uint64_t>(extent) * static_cast<uint64_t>(c.end - c.start);
  }
  return kept;
}

TEST_F(CooperativeLoad, ShardRanksReceiveTheirShardsOnly) {
  const auto source = WeightSource::file(dir_ / "model.safetensors");
  for (const int ranks : {2, 4})
    for (const int dim : {0, 1}) {  // row- and column-parallel
      SCOPED_TRACE(fmt::format("{} ranks, --shard-dim {}", ranks, dim));
      for (const json& report :
           reports(ranks, fmt::format("--shard --shard-dim {} {}", dim,
                                      shell_quote((dir_ / "model.safetensors").string())))) {
        const int rank = report.at("rank");
        EXPECT_EQ(hashes_of(report), reference_hashes(source, [&](int dims) {
                    std::vector<Transformation> steps;
                    if (dims > dim)
                      steps.push_back(Shard{.rank = rank, .world = ranks, .dim = dim});
                    return steps;
                  }));
        // What a rank keeps came from the others, except what it read itself.
        const uint64_t kept = kept_bytes(source, dim, rank, ranks);
        const auto received = report.at("received_bytes").get<uint64_t>();
        EXPECT_LE(received, kept);
        EXPECT_GE(received + report.at("storage_bytes").get<uint64_t>(), kept);
      }
    }
}

TEST_F(CooperativeLoad, DeviceCudaWithoutAGpuFailsEveryRankAsUnsupported) {
  if (cuda_device_count() > 0)
    GTEST_SKIP() << "this machine has a GPU: cooperative_device_test loads over NCCL instead";
  const CommandResult r =
      mpirun(2, "--device cuda " + shell_quote((dir_ / "model.safetensors").string()));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const std::string agreed = "(listing the tensors) failed on rank 0 of 2";
  size_t count = 0;
  for (size_t at = r.err.find(agreed); at != std::string::npos; at = r.err.find(agreed, at + 1))
    ++count;
  EXPECT_EQ(count, 2u) << r.err;
  EXPECT_NE(r.err.find("unsupported"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--device cuda"), std::string::npos) << r.err;
}

TEST_F(CooperativeLoad, EveryFormatSplitsTheSameWay) {
  BALLAST_REQUIRE_GOLDEN();
  // GGUF (block dtypes stay whole), ONNX, and a bare torch.save(tensor) (no name).
  for (const std::string file :
       {"real-world/ollama/llama-2-tiny-random.gguf", "real-world/silero/silero_vad_v6.onnx",
        "pytorch/single_tensor_legacy.pt"}) {
    SCOPED_TRACE(file);
    const fs::path path = *golden_dir() / file;
    const auto expected = reference_hashes(WeightSource::file(path),
                                           [](int) { return std::vector<Transformation>{}; });
    for (const json& report : reports(2, shell_quote(path.string())))
      EXPECT_EQ(hashes_of(report), expected);
  }
}

TEST_F(CooperativeLoad, UrlRanksFetchTheTensorBytesOnceInAll) {
  NginxServer server(std::nullopt);
  BALLAST_REQUIRE_NGINX(server);
  fs::copy_file(dir_ / "model.safetensors", server.files() / "model.safetensors");
  const auto expected = reference_hashes(WeightSource::file(dir_ / "model.safetensors"),
                                         [](int) { return std::vector<Transformation>{}; });
  server.clear_log();
  uint64_t read = 0;
  for (const json& report : reports(2, shell_quote(server.url("files/model.safetensors")))) {
    EXPECT_EQ(hashes_of(report), expected);
    read += report.at("storage_bytes").get<uint64_t>();
    EXPECT_EQ(report.at("verified_bytes"), 0);  // one object, read by every rank: one copy
  }
  EXPECT_EQ(read, tensor_bytes());
  // The server sent the tensors once, plus each rank's header reads: not once per rank.
  const uint64_t sent = server.settled_body_bytes();
  EXPECT_GE(sent, tensor_bytes());
  EXPECT_LE(sent, tensor_bytes() + 2 * (128 << 10));
  for (const NginxRequest& request : server.requests())
    if (request.method == "GET") {
      EXPECT_FALSE(request.range.empty()) << "a whole-file GET: " << request.uri;
    }
}

// Network namespaces made by tests/support/netns_hosts.sh for the life of a test: separate
// hosts whose ranks exchange over veth and a bridge.
class NetnsHosts {
 public:
  explicit NetnsHosts(int count)
      : count_(count),
        prefix_(fmt::format("bc{}", getpid() % 100000)),
        subnet_(fmt::format("10.213.{}", getpid() % 250)) {
    ok_ = run_command(fmt::format("{} up {} {} {} 2>&1", script(), prefix_, count_, subnet_))
              .exit_code == 0;
  }
  ~NetnsHosts() { run_command(fmt::format("{} down {} {}", script(), prefix_, count_)); }
  NetnsHosts(const NetnsHosts&) = delete;
  NetnsHosts& operator=(const NetnsHosts&) = delete;

  bool ok() const { return ok_; }
  CommandResult mpirun(const std::string& command) const {
    return run_command(fmt::format("{} timeout 120 {} mpirun {} {} {} {}", lsan_environment(),
                                   script(), prefix_, subnet_, count_, command));
  }
  uint64_t veth_bytes() const {
    return std::stoull(run_command(fmt::format("{} bytes {} {}", script(), prefix_, count_)).out);
  }

 private:
  static std::string script() {
    return shell_quote((fs::path(BALLAST_SOURCE_DIR) / "tests/support/netns_hosts.sh").string());
  }
  int count_;
  std::string prefix_, subnet_;
  bool ok_ = false;
};

TEST_F(CooperativeLoad, RanksOnSeparateNetworkHostsExchangeOverVeth) {
  if (geteuid() != 0 || run_command("command -v ip").exit_code != 0)
    BALLAST_MISSING("network namespaces need root and ip (iproute2)");
  NetnsHosts hosts(2);
  if (!hosts.ok()) BALLAST_MISSING("ip netns add failed (no network namespaces here)");
  const auto expected = reference_hashes(WeightSource::file(dir_ / "model.safetensors"),
                                         [](int) { return std::vector<Transformation>{}; });
  const CommandResult r =
      hosts.mpirun(fmt::format("{} load --cooperative --json {}", shell_quote(cli_path()),
                               shell_quote((dir_ / "model.safetensors").string())));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  uint64_t received = 0;
  size_t ranks = 0;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] != '{') continue;
    const json report = json::parse(line);
    EXPECT_EQ(hashes_of(report), expected);
    received += report.at("received_bytes").get<uint64_t>();
    ++ranks;
  }
  EXPECT_EQ(ranks, 2u);
  // What the ranks received crossed the veths (each byte counted leaving and entering).
  EXPECT_GE(hosts.veth_bytes(), received);
}

// Rank 0 reads a good checkpoint, rank 1 its own copy, written by `second`.
std::string per_rank_source(const TempDir& dir, const std::optional<std::string>& second) {
  fs::create_directories(dir / "rank0");
  fs::create_directories(dir / "rank1");
  write_file(dir / "rank0" / "model.safetensors", checkpoint(7));
  if (second) write_file(dir / "rank1" / "model.safetensors", *second);
  return fmt::format("\"{}/rank$OMPI_COMM_WORLD_RANK/model.safetensors\"", dir.path().string());
}

// Rank 1's copy of the checkpoint with the byte at `offset` changed, its size and
// modification time those of rank 0's copy: a stale or damaged copy that only its data tells.
void damage_rank1_copy(const TempDir& dir, uint64_t offset) {
  const fs::path good = dir / "rank0" / "model.safetensors";
  const fs::path copy = dir / "rank1" / "model.safetensors";
  std::string bytes = read_file(good);
  bytes.at(offset) = static_cast<char>(bytes.at(offset) ^ 0x01);
  write_file(copy, bytes);
  fs::last_write_time(copy, fs::last_write_time(good));
}

// Where the tensor data of checkpoint() begins: after the 8-byte length and the header.
uint64_t data_start(const fs::path& file) {
  const std::string bytes = read_file(file);
  uint64_t header = 0;
  std::memcpy(&header, bytes.data(), sizeof header);
  return 8 + header;
}

TEST_F(CooperativeLoad, StaleDataInThePartOneRankReadsFailsEveryRankNamingIt) {
  // f.bf16, the last tensor, lies in rank 1's part: rank 1 reads it, rank 0 reads it again.
  const std::string source = per_rank_source(dir_, checkpoint(7));
  damage_rank1_copy(dir_, fs::file_size(dir_ / "rank0" / "model.safetensors") - 10);
  const CommandResult r = expect_all_fail(
      2, source, 1, "integrity: cooperative load: the bytes of tensor 'f.bf16' that rank 1 read");
  EXPECT_NE(r.err.find("read from " + (dir_ / "rank1" / "model.safetensors").string() +
                       " differ from rank 0's copy of them"),
            std::string::npos)
      << r.err;
}

TEST_F(CooperativeLoad, StaleDataInThePartAnotherRankReadsFailsEveryRankNamingIt) {
  // a.big's first row lies in rank 0's part: rank 1's damaged copy is read only to check it.
  const std::string source = per_rank_source(dir_, checkpoint(7));
  damage_rank1_copy(dir_, data_start(dir_ / "rank0" / "model.safetensors") + 10);
  const CommandResult r = expect_all_fail(
      2, source, 0, "integrity: cooperative load: the bytes of tensor 'a.big' (rows 0..");
  EXPECT_NE(r.err.find("that rank 0 read from " + (dir_ / "rank0" / "model.safetensors").string() +
                       " differ from rank 1's copy of them"),
            std::string::npos)
      << r.err;
}

TEST_F(CooperativeLoad, HeaderDifferingOnOneRankFailsEveryRankNamingIt) {
  // The same tensors, dtypes and shapes; the format metadata differs.
  const std::string source = per_rank_source(dir_, checkpoint(7, nlohmann::json{{"format", "np"}}));
  expect_all_fail(2, source, 1,
                  "integrity: cooperative load: rank 1's copy of the checkpoint differs from "
                  "rank 0's: the headers of " +
                      (dir_ / "rank1" / "model.safetensors").string());
}

TEST_F(CooperativeLoad, FileSizeDifferingOnOneRankFailsEveryRankNamingIt) {
  BALLAST_REQUIRE_GOLDEN();
  // A GGUF file (which may end in bytes no tensor uses): rank 1's copy has 8 more at its end.
  const fs::path gguf = *golden_dir() / "real-world/ollama/llama-2-tiny-random.gguf";
  fs::create_directories(dir_ / "rank0");
  fs::create_directories(dir_ / "rank1");
  fs::copy_file(gguf, dir_ / "rank0" / "model.gguf");
  write_file(dir_ / "rank1" / "model.gguf", read_file(gguf) + "trailing");
  expect_all_fail(
      2, fmt::format("\"{}/rank$OMPI_COMM_WORLD_RANK/model.gguf\"", dir_.path().string()), 1,
      fmt::format("integrity: cooperative load: rank 1's copy of the checkpoint "
                  "differs from rank 0's: {} is {} bytes, rank 0's copy {}",
                  (dir_ / "rank1" / "model.gguf").string(), fs::file_size(gguf) + 8,
                  fs::file_size(gguf)));
}

TEST_F(CooperativeLoad, MissingFileOnOneRankFailsEveryRank) {
  expect_all_fail(2, per_rank_source(dir_, std::nullopt), 1, "not_found");
}

TEST_F(CooperativeLoad, HostileFileOnOneRankFailsEveryRank) {
  // A header whose tensor claims bytes past the end of the file.
  const std::string hostile = safetensors_bytes(
      R"({"a.big":{"dtype":"F32","shape":[256,1024],"data_offsets":[0,1048576]}})", "tiny");
  expect_all_fail(2, per_rank_source(dir_, hostile), 1, "invalid_format");
}

TEST_F(CooperativeLoad, RanksSeeingDifferentCheckpointsAllFail) {
  const std::string other = safetensors_file({{"x", "F32", {2}, "12345678"}});
  const CommandResult r = mpirun(2, per_rank_source(dir_, other));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.exit_code, 124) << "mpirun hung";
  EXPECT_NE(r.err.find("the ranks see different checkpoints"), std::string::npos) << r.err;
}

TEST_F(CooperativeLoad, UrlMissingOnOneRankFailsEveryRank) {
  NginxServer server(std::nullopt);
  BALLAST_REQUIRE_NGINX(server);
  write_file(server.files() / "rank0.safetensors", checkpoint(7));
  const std::string url = server.url("files/rank");
  expect_all_fail(2, fmt::format("\"{}$OMPI_COMM_WORLD_RANK.safetensors\"", url), 1, "rank 1");
}

TEST_F(CooperativeLoad, NetworkFaultWhileOneRankReadsFailsEveryRank) {
  // tests/servers/fault_server.py: rank 0 reads /ok/, rank 1 /cut/N/, whose GET of the range
  // holding byte N (in rank 1's part, the file's end) breaks off; with no retries rank 1 fails
  // after the plan, while it reads.
  Process server({"/usr/bin/python3", BALLAST_SOURCE_DIR "/tests/servers/fault_server.py",
                  dir_.path().string()});
  const auto line = server.read_line(std::chrono::seconds(20));
  if (!line) BALLAST_MISSING("tests/servers/fault_server.py did not start");
  int port = 0;
  std::istringstream(*line) >> port;
  const uint64_t near_end = fs::file_size(dir_ / "model.safetensors") - 100;
  const std::string path =
      fmt::format("$([ $OMPI_COMM_WORLD_RANK = 0 ] && echo ok || echo cut/{})", near_end);
  expect_all_fail(
      2,
      fmt::format("--retries 0 --timeout 10 \"http://127.0.0.1:{}/{}/model.safetensors\"", port,
                  path),
      1, "(reading)");
}

S3Server& s3_server() { return process_wide<S3Server>(); }

// Long-term keys and the server's endpoint and region in the environment the ranks inherit.
class CooperativeLoadS3 : public AwsIsolatedTest {
 protected:
  void SetUp() override {
    AwsIsolatedTest::SetUp();
    BALLAST_REQUIRE_MPI();
    BALLAST_REQUIRE_S3(s3_server());
    setenv("AWS_ACCESS_KEY_ID", S3Server::kKeys.access_key.c_str(), 1);
    setenv("AWS_SECRET_ACCESS_KEY", S3Server::kKeys.secret_key.c_str(), 1);
    setenv("AWS_REGION", S3Server::kRegion, 1);
    setenv("AWS_ENDPOINT_URL", s3_server().endpoint().c_str(), 1);
  }
  TempDir dir_;
};

TEST_F(CooperativeLoadS3, RanksFetchTheTensorBytesOnceInAll) {
  write_file(dir_ / "model.safetensors", checkpoint(9));
  s3_server().upload("models", dir_ / "model.safetensors", "coop.safetensors");
  const auto expected = reference_hashes(WeightSource::file(dir_ / "model.safetensors"),
                                         [](int) { return std::vector<Transformation>{}; });
  s3_server().clear_log();
  uint64_t read = 0;
  for (const json& report : reports(4, "s3://models/coop.safetensors")) {
    EXPECT_EQ(hashes_of(report), expected);
    read += report.at("storage_bytes").get<uint64_t>();
  }
  EXPECT_EQ(read, tensor_bytes());
  // The proxy's log: ranged GETs only, the tensors' bytes once plus each rank's header reads.
  EXPECT_GE(s3_server().get_bytes(), tensor_bytes());
  EXPECT_LE(s3_server().get_bytes(), tensor_bytes() + 4 * (128 << 10));
  for (const json& request : s3_server().requests())
    if (request.at("method") == "GET") {
      EXPECT_FALSE(request.at("range").is_null() || request.at("range") == "") << request;
    }
}

}  // namespace
}  // namespace ballast::test
