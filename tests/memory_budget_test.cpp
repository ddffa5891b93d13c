// The memory budget of an owned load (issue 7): loading N bytes of tensors into owned memory
// raises the process's peak resident memory by at most N + 64 MiB + the staging budget, in every
// read mode and with a widening cast; owned loads never hold two full copies of a tensor.
// Measured on the real CLI (getrusage peak RSS), against the same command on a tiny file so
// the binary, its libraries and the sanitizer runtime are not counted.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/safetensors_writer.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kStagingBudget = 64 * kMiB;  // LoaderConfig::max_staging_bytes default

class MemoryBudget : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    // 40 large f32 tensors (dedicated mappings) and 300 small bf16 ones (slabs): 172 MiB.
    std::vector<StTensor> tensors;
    for (int i = 0; i < 40; ++i)
      tensors.push_back({"large." + std::to_string(i),
                         "F32",
                         {1024, 1024},
                         std::string(4 * kMiB, static_cast<char>(i))});
    for (int i = 0; i < 300; ++i)
      tensors.push_back(
          {"small." + std::to_string(i), "BF16", {96, 128}, std::string(96 * 128 * 2, 'x')});
    write_file(big(), safetensors_file(tensors));
    write_file(tiny(), safetensors_file({{"t", "F32", {1}, f32_bytes({1})}}));
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::string big() { return (dir_->path() / "big.safetensors").string(); }
  static std::string tiny() { return (dir_->path() / "tiny.safetensors").string(); }

  // Peak RSS and loaded bytes of `ballast load --json ARGS FILE`. ASan's quarantine would keep
  // freed staging blocks resident, so it is turned off for these runs.
  static std::pair<uint64_t, uint64_t> load(const std::string& args, const std::string& file) {
    auto r = run_command("ASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0\" " +
                         cli_path() + " load --json " + args + " " + shell_quote(file));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto report = nlohmann::json::parse(r.out);
    return {report["peak_rss_bytes"].get<uint64_t>(), report["bytes"].get<uint64_t>()};
  }

  static void expect_within_budget(const std::string& args) {
    const auto [base_rss, tiny_bytes] = load(args, tiny());
    const auto [peak_rss, bytes] = load(args, big());
    ASSERT_GT(bytes, 150 * kMiB);
    const uint64_t grown = peak_rss > base_rss ? peak_rss - base_rss : 0;
    EXPECT_LE(grown, bytes + 64 * kMiB + kStagingBudget)
        << args << ": loading " << bytes / kMiB << " MiB raised peak RSS by " << grown / kMiB
        << " MiB";
    // And the load did not keep a second full copy around: well under twice the bytes.
    EXPECT_LT(grown, 2 * bytes) << args;
  }

  static TempDir* dir_;
};
TempDir* MemoryBudget::dir_ = nullptr;

TEST_F(MemoryBudget, ReadMode) { expect_within_budget("--mode read --threads 2"); }
TEST_F(MemoryBudget, IoUringMode) { expect_within_budget("--mode io_uring --threads 2"); }
TEST_F(MemoryBudget, DirectMode) { expect_within_budget("--mode direct --threads 2"); }
TEST_F(MemoryBudget, ReadModeWithACastToF32) {
  expect_within_budget("--mode read --threads 2 --dtype f32");
}

}  // namespace
}  // namespace ballast::test
