// Shared helpers for ballast's tests: where the golden corpus is, the manifest, the CLI
// binary, temporary folders, running commands, Debian's /usr/bin/python3 (the fixture
// writers) and the project's virtual environment (the PyPI servers and reference clients).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "ballast/error.hpp"

namespace ballast::test {

// ../shared/golden beside the checkout (or $BALLAST_GOLDEN_DIR); nullopt when absent.
std::optional<std::filesystem::path> golden_dir();
// The parsed golden manifest.json (golden_dir() must exist).
const nlohmann::json& golden_manifest();
// Manifest entries whose "format" equals `format`.
std::vector<nlohmann::json> golden_entries(const std::string& format);

// Skips the current test with a message when the golden corpus is absent.
#define BALLAST_REQUIRE_GOLDEN()                                                \
  do {                                                                          \
    if (!::ballast::test::golden_dir())                                         \
      GTEST_SKIP() << "../shared/golden is absent; golden-corpus test skipped"; \
  } while (0)

// The built `ballast` executable ($BALLAST_CLI, set by ctest).
std::string cli_path();

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};
// Runs `command` through /bin/sh, capturing stdout and stderr.
CommandResult run_command(const std::string& command);
// Quotes one argument for /bin/sh.
std::string shell_quote(const std::string& arg);

// True when CI is set: a component the tests need (a server, a Python package) that is
// missing then fails the test instead of skipping it.
bool in_ci();
// Ends the current test for a missing component: a failure under CI, a skip (the message
// names what is missing and how to install it) elsewhere.
#define BALLAST_MISSING(message)                                                 \
  do {                                                                           \
    if (::ballast::test::in_ci()) GTEST_FAIL() << (message) << " (CI needs it)"; \
    GTEST_SKIP() << (message);                                                   \
  } while (0)

// Debian's interpreter, which writes the torch, numpy and onnx fixtures.
inline constexpr const char* kDebianPython = "/usr/bin/python3";
// The project's virtual environment's interpreter ($BALLAST_TEST_PYTHON, set by ctest; else
// .venv/bin/python in the source tree), with requirements/test.txt installed.
std::string venv_python();

// True when /usr/bin/python3 can import `module`.
bool python_has(const std::string& module);
// Ends the current test (BALLAST_MISSING) when /usr/bin/python3 cannot import `module`.
#define BALLAST_REQUIRE_PYTHON(module)                                                    \
  do {                                                                                    \
    if (!::ballast::test::python_has(module))                                             \
      BALLAST_MISSING("/usr/bin/python3 cannot import " module "; run scripts/setup.sh"); \
  } while (0)
// Runs a Python program (source text) with `interpreter` (Debian's by default) and `args`;
// fails the test on a non-zero exit. Returns stdout.
std::string run_python(const std::string& program, const std::vector<std::string>& args = {},
                       const std::string& interpreter = kDebianPython);

// The ballast::Error that `call` throws; when it throws none, a test failure and an io error.
Error error_of(const std::function<void()>& call);
// The code of the ballast::Error that `call` throws; when it throws none, a test failure
// (naming `what_was_expected`) and ErrorCode::io.
ErrorCode error_code_of(const std::function<void()>& call, const std::string& what_was_expected);

// A fresh temporary folder, removed with everything in it when the object dies.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// Writes bytes to a file (creating folders).
void write_file(const std::filesystem::path& path, const std::string& bytes);
std::string read_file(const std::filesystem::path& path);

// n pseudo-random bytes (xorshift32), the same for the same seed.
std::string pattern_bytes(size_t n, int seed);

// One T for the whole test process (a server, say), made on first use and destroyed by an
// atexit handler, so it stops before the process ends whichever test ran last.
template <typename T>
T& process_wide() {
  static T* instance = new T();
  static const bool destroy_at_exit = [] {
    std::atexit([] { delete instance; });
    return true;
  }();
  (void)destroy_at_exit;
  return *instance;
}

}  // namespace ballast::test
