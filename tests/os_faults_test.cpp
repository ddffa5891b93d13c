// Faults of the file system injected through the loader's Os seam (support/faulty_os.hpp):
// short reads and EINTR are retried until the bytes are whole, EIO is Error(io) naming the
// file, and a file that fstat finds shorter than when it was opened is never mapped again.
#include <gtest/gtest.h>

#include <filesystem>

#include "ballast/ballast.hpp"
#include "io/file_source.hpp"
#include "loader/default_loader.hpp"
#include "support/faulty_os.hpp"
#include "support/safetensors_writer.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

namespace fs = std::filesystem;

std::string pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<char>(i * 7 + 3);
  return s;
}

class OsFaults : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_ / "m.safetensors";
    write_file(path_, safetensors_file({{"a", "U8", {kBytes}, pattern(kBytes)}}));
  }
  static constexpr size_t kBytes = 100'000;
  TempDir dir_;
  fs::path path_;
};

TEST_F(OsFaults, ShortAndInterruptedReadsStillLoadEveryByte) {
  for (ReadMode mode : {ReadMode::read, ReadMode::io_uring, ReadMode::direct}) {
    auto os = std::make_shared<FaultyOs>();
    os->max_read_bytes = 4096;  // whole pages: O_DIRECT reads stay aligned
    os->interrupt_reads = true;
    WeightLoaderConfig config;
    config.read_mode = mode;
    auto loader = make_default_loader_with_os(config, os);
    const auto t = loader->load_tensor({.name = "a", .source = WeightSource::file(path_)});
    const auto bytes = t->as<uint8_t>();
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
              pattern(kBytes))
        << read_mode_name(mode);
    // Cut short and interrupted, every read went through the Os (none through io_uring).
    EXPECT_GT(os->pread_calls, 2 * static_cast<int>(kBytes / 4096)) << read_mode_name(mode);
  }
}

TEST_F(OsFaults, AFailingReadIsAnIoErrorNamingTheFile) {
  auto os = std::make_shared<FaultyOs>();
  WeightLoaderConfig config;
  config.read_mode = ReadMode::read;
  auto loader = make_default_loader_with_os(config, os);
  const auto source = WeightSource::file(path_);
  (void)loader->get_metadata(source);
  os->fail_reads = true;
  try {
    (void)loader->load_tensor({.name = "a", .source = source});
    FAIL() << "a failed read was handed out";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::io) << e.what();
    EXPECT_NE(std::string(e.what()).find(path_.string()), std::string::npos) << e.what();
  }
}

TEST_F(OsFaults, AFileFoundShorterIsNeverMappedAgain) {
  auto os = std::make_shared<FaultyOs>();
  auto source = open_file_source(path_, {.os = os});
  ASSERT_NE(source->mapping(), nullptr);
  os->shrink_by = 1;
  EXPECT_EQ(source->mapping(), nullptr);
}

}  // namespace
}  // namespace ballast::test
