// A FIFO, socket or device where a weight file should be is refused at once (opened with
// O_NONBLOCK, then fstat): reading one would block forever or never end.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "ballast/ballast.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

namespace fs = std::filesystem;

ErrorCode error_of_metadata(const WeightSource& source) {
  return error_code_of([&] { make_weight_loader()->get_metadata(source); },
                       "a special file was read");
}

TEST(SpecialFiles, AFifoAsTheSourceIsRefusedWithoutBlocking) {
  TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "model.safetensors").c_str(), 0600), 0);
  EXPECT_EQ(error_of_metadata(WeightSource::file(dir / "model.safetensors")),
            ErrorCode::invalid_argument);
}

TEST(SpecialFiles, AFifoInAModelFolderIsRefusedWithoutBlocking) {
  TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "model.safetensors").c_str(), 0600), 0);
  EXPECT_NE(error_of_metadata(WeightSource::file(dir.path())), ErrorCode::io);
}

TEST(SpecialFiles, ACharacterDeviceIsRefused) {
  EXPECT_EQ(error_of_metadata(WeightSource::file("/dev/zero")), ErrorCode::invalid_argument);
}

TEST(SpecialFiles, TheCliNamesWhatKindOfFileItRefused) {
  TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "w.safetensors").c_str(), 0600), 0);
  auto r = run_command(cli_path() + " inspect " + shell_quote((dir / "w.safetensors").string()));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("not a regular file (a FIFO)"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ballast::test
