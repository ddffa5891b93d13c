// What a small hostile file makes ballast allocate, measured (issue 30): the CLI's peak resident
// memory (getrusage of the child) loading a generated hostile file, less the same command on a
// one-tensor file of the same format, as a multiple of the hostile file's size. A pickle that
// reuses one value through the memo, GGUF metadata of one huge u8 array, and a deflated .npz
// member loaded in read mode (inflated straight into its tensor: one copy, not two).
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "support/test_support.hpp"
#include "support/torch_pickle_builder.hpp"

namespace ballast::test {
namespace {

constexpr uint64_t kMiB = 1 << 20;

// Peak RSS in bytes of `ballast ARGS` run to its end, which must exit with `status` (0, or 1
// for a refused file). ASan's quarantine would keep freed blocks resident, so it is turned off
// for the child.
uint64_t cli_peak_rss(const std::vector<std::string>& args, int exit_status) {
  std::string options = "quarantine_size_mb=0";
  if (const char* asan = std::getenv("ASAN_OPTIONS"); asan && *asan)
    options = std::string(asan) + ":" + options;
  const std::string cli = cli_path();
  const pid_t pid = fork();
  if (pid == 0) {
    setenv("ASAN_OPTIONS", options.c_str(), 1);
    if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr)) _exit(126);
    std::vector<char*> argv{const_cast<char*>(cli.c_str())};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(cli.c_str(), argv.data());
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  EXPECT_EQ(wait4(pid, &status, 0, &usage), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == exit_status)
      << "wait status " << status << " of ballast " << testing::PrintToString(args);
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024;
}

// Peak RSS of `command` on `file` above the same command on `baseline`, over the file size.
// (A child's peak includes this process's resident memory when it forks, and under ASan freed
// memory stays resident: the tests never hold a big buffer.)
// The hostile file's command must exit with `exit_status`; the baseline's must succeed.
double multiple_of_file(const std::vector<std::string>& command, const std::string& file,
                        const std::string& baseline, int exit_status,
                        uint64_t* grown_out = nullptr) {
  auto with = [&](const std::string& f, int status) {
    auto args = command;
    args.push_back(f);
    return cli_peak_rss(args, status);
  };
  const uint64_t base = with(baseline, 0);
  const uint64_t peak = with(file, exit_status);
  const uint64_t grown = peak > base ? peak - base : 0;
  if (grown_out) *grown_out = grown;
  const double multiple =
      static_cast<double>(grown) / static_cast<double>(std::filesystem::file_size(file));
  std::printf("%s: %ju bytes, peak RSS +%.1f MiB = %.1fx its size\n", file.c_str(),
              static_cast<uintmax_t>(std::filesystem::file_size(file)),
              static_cast<double>(grown) / kMiB, multiple);
  return multiple;
}

std::string le(uint64_t v, int bytes) {
  std::string out;
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
  return out;
}

class HostileMemory : public testing::Test {
 protected:
  TempDir dir_;
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string write(const std::string& name, const std::string& bytes) const {
    write_file(dir_ / name, bytes);
    return path(name);
  }
};

TEST_F(HostileMemory, APickleReusingOneValueStaysWithinItsBudget) {
  using B = PickleBuilder;
  // A 1 MiB string listed 100,000 times through the memo: 100 GB as copies.
  std::string body = B().str(std::string(1 << 20, 'a')).bytes() + "q" + std::string(1, '\0');
  for (int i = 0; i < 100'000; ++i) body += "]0";
  body += "](";
  for (int i = 0; i < 100'000; ++i) body += "h" + std::string(1, '\0');
  body += "e";
  const std::string hostile =
      write("memo.pt", torch_zip_file(B().proto(2).raw(body).stop().bytes(), {}));
  B small;
  small.proto(2).op('}').str("w").tensor("FloatStorage", "0", 1, 0, {1}, {1}).op('s').stop();
  const std::string baseline = write("one.pt", torch_zip_file(small.bytes(), {{"0", "abcd"}}));
  // The budget: 16 MiB plus 64 bytes per pickle byte, here about 84x the file.
  EXPECT_LT(multiple_of_file({"load", "--json"}, hostile, baseline, 1), 128.0);
}

TEST_F(HostileMemory, GgufMetadataCostsASmallMultipleOfItsSize) {
  // One u8 array of 8 million elements (8 MB): its JSON text is "255," per element. Written
  // in pieces, so that this process holds no big buffer when the children fork.
  const uint64_t n = 8'000'000;
  const std::string hostile = path("array.gguf");
  {
    std::ofstream out(hostile, std::ios::binary);
    out << "GGUF" + le(3, 4) + le(0, 8) + le(1, 8) + le(1, 8) + "a" + le(9, 4) + le(0, 4) +
               le(n, 8);
    const std::string piece(n / 8, '\xff');
    for (int i = 0; i < 8; ++i) out << piece;
  }
  const std::string baseline = write("one.gguf", "GGUF" + le(3, 4) + le(0, 8) + le(0, 8));
  // Loading, and inspecting (the table and the JSON print the metadata), alike.
  for (const std::vector<std::string>& command :
       {std::vector<std::string>{"load", "--json"}, {"inspect"}, {"inspect", "--json"}})
    EXPECT_LT(multiple_of_file(command, hostile, baseline, 0), 12.0)
        << testing::PrintToString(command);
}

TEST_F(HostileMemory, ADeflatedNpzMemberInflatesOnceInReadMode) {
  // 64 MiB of int32 that deflate to a little, written by numpy in a process of its own.
  BALLAST_REQUIRE_PYTHON("numpy");
  constexpr uint64_t kBytes = 64 * kMiB;
  const std::string hostile = path("deflated.npz"), baseline = path("one.npz");
  run_python(
      "import sys, numpy as np\n"
      "a = (np.arange(16 << 20, dtype=np.uint64) * 2654435761 % 7).astype('<i4')\n"
      "np.savez_compressed(sys.argv[1], a=a)\n"
      "np.savez_compressed(sys.argv[2], a=a[:1])\n",
      {hostile, baseline});
  uint64_t grown = 0;
  multiple_of_file({"load", "--json", "--mode", "read", "--threads", "2"}, hostile, baseline, 0,
                   &grown);
  EXPECT_GE(grown, kBytes * 3 / 4) << "the tensor itself is resident";
  EXPECT_LT(grown, kBytes + 32 * kMiB) << "one copy of the member, not two";
}

}  // namespace
}  // namespace ballast::test
