// Shared helpers for ballast's tests (see test_support.hpp).
#include "support/test_support.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

namespace ballast::test {

std::optional<std::filesystem::path> golden_dir() {
  std::filesystem::path dir;
  if (const char* env = std::getenv("BALLAST_GOLDEN_DIR"); env && *env)
    dir = env;
  else
    dir = BALLAST_DEFAULT_GOLDEN_DIR;
  std::error_code ec;
  if (!std::filesystem::exists(dir / "manifest.json", ec)) return std::nullopt;
  return std::filesystem::weakly_canonical(dir, ec);
}

const nlohmann::json& golden_manifest() {
  static const nlohmann::json manifest = [] {
    auto dir = golden_dir();
    if (!dir) return nlohmann::json::object();
    std::ifstream in(*dir / "manifest.json");
    return nlohmann::json::parse(in);
  }();
  return manifest;
}

std::vector<nlohmann::json> golden_entries(const std::string& format) {
  std::vector<nlohmann::json> out;
  const auto& manifest = golden_manifest();
  if (!manifest.contains("files")) return out;
  for (const auto& file : manifest["files"])
    if (file.value("format", "") == format) out.push_back(file);
  return out;
}

std::string cli_path() {
  const char* env = std::getenv("BALLAST_CLI");
  return env ? env : "ballast";
}

std::string shell_quote(const std::string& arg) {
  std::string out = "'";
  for (char c : arg) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

CommandResult run_command(const std::string& command) {
  TempDir dir;
  auto err_path = dir / "stderr";
  std::string full = command + " 2>" + shell_quote(err_path.string());
  CommandResult result;
  FILE* pipe = popen(full.c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[65536];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) result.out.append(buffer, n);
  int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.err = read_file(err_path);
  return result;
}

bool in_ci() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && *ci != '\0';
}

std::string venv_python() {
  if (const char* env = std::getenv("BALLAST_TEST_PYTHON"); env && *env) return env;
  return BALLAST_SOURCE_DIR "/.venv/bin/python";
}

bool python_has(const std::string& module) {
  auto r = run_command(std::string(kDebianPython) + " -c " + shell_quote("import " + module) +
                       " >/dev/null");
  return r.exit_code == 0;
}

std::string run_python(const std::string& program, const std::vector<std::string>& args,
                       const std::string& interpreter) {
  TempDir dir;
  auto script = dir / "script.py";
  write_file(script, program);
  std::string command = shell_quote(interpreter) + " " + shell_quote(script.string());
  for (const auto& a : args) command += " " + shell_quote(a);
  auto r = run_command(command);
  EXPECT_EQ(r.exit_code, 0) << "python failed:\n" << r.err;
  return r.out;
}

Error error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "expected an error";
  return Error(ErrorCode::io, "no error");
}

ErrorCode error_code_of(const std::function<void()>& call, const std::string& what_was_expected) {
  try {
    call();
  } catch (const Error& e) {
    return e.code();
  }
  ADD_FAILURE() << "no error: " << what_was_expected;
  return ErrorCode::io;
}

TempDir::TempDir() {
  std::random_device rd;
  auto base = std::filesystem::temp_directory_path();
  for (;;) {
    path_ = base / ("ballast-test-" + std::to_string(rd()));
    if (std::filesystem::create_directory(path_)) break;
  }
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void write_file(const std::filesystem::path& path, const std::string& bytes) {
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string pattern_bytes(size_t n, int seed) {
  std::string bytes(n, '\0');
  uint32_t x = 2463534242u + static_cast<uint32_t>(seed);
  for (char& c : bytes) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    c = static_cast<char>(x);
  }
  return bytes;
}

}  // namespace ballast::test
