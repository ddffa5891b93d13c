// Replays every input the fuzzers ever found failing (fuzz/regressions/<target>/<file>)
// through the same code the fuzz target runs, in every build: each must now be handled
// without a crash, a sanitizer report or an exception other than ballast::Error.
#include <gtest/gtest.h>

#include <filesystem>

#include "fuzz_support.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> regression_inputs() {
  std::vector<fs::path> inputs;
  const fs::path root = fs::path(BALLAST_SOURCE_DIR) / "fuzz" / "regressions";
  for (const auto& entry : fs::recursive_directory_iterator(root))
    if (entry.is_regular_file()) inputs.push_back(entry.path());
  std::sort(inputs.begin(), inputs.end());
  return inputs;
}

class FuzzRegression : public ::testing::TestWithParam<fs::path> {};

TEST_P(FuzzRegression, IsHandledCleanly) {
  const fs::path& input = GetParam();
  const std::string bytes = read_file(input);
  EXPECT_NO_FATAL_FAILURE(fuzz::run_target(input.parent_path().filename().string(),
                                           reinterpret_cast<const uint8_t*>(bytes.data()),
                                           bytes.size()));
}

INSTANTIATE_TEST_SUITE_P(Inputs, FuzzRegression, ::testing::ValuesIn(regression_inputs()),
                         [](const auto& param_info) {
                           std::string name = param_info.param.parent_path().filename().string() +
                                              "_" + param_info.param.filename().string();
                           for (char& c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });

}  // namespace
}  // namespace ballast::test
