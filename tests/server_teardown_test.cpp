// Test servers die with their test: a test process that aborts while it holds nginx, the Python
// stand-ins and the S3 proxy with moto (tests/support/server_holder.cpp) leaves no process of
// theirs behind and none holding its output pipe, which ctest would otherwise wait on.
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include "support/process.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

namespace fs = std::filesystem;

// The live (not zombie) processes of process group `group`, its leader included, as
// "pid (name)".
std::vector<std::string> live_members(pid_t group) {
  std::vector<std::string> out;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string pid = entry.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "stat");
    std::string stat;
    if (!std::getline(in, stat)) continue;  // it ended meanwhile
    // pid (comm) state ppid pgrp ...: comm may hold spaces, so read from its last ')'.
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 1));
    char state = 0;
    pid_t ppid = 0, pgrp = 0;
    rest >> state >> ppid >> pgrp;
    const bool member = pgrp == group || pid == std::to_string(group);
    if (member && state != 'Z') out.push_back(stat.substr(0, close + 1));
  }
  return out;
}

// Waits (bounded) until group `group` has no live process; returns those still there.
std::vector<std::string> wait_until_gone(pid_t group) {
  std::vector<std::string> left = live_members(group);
  for (int i = 0; i < 200 && !left.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    left = live_members(group);
  }
  return left;
}

TEST(ServerTeardown, ACrashedTestLeavesNoServerBehind) {
  TempDir folder;
  Process holder({BALLAST_SERVER_HOLDER, folder.path().string()});
  std::map<std::string, pid_t> servers;
  std::string missing;
  bool crashing = false;
  while (const auto line = holder.read_line(std::chrono::seconds(90))) {
    std::istringstream words(*line);
    std::string word, name;
    words >> word >> name;
    if (word == "server") {
      pid_t pid = 0;
      words >> pid;
      servers[name] = pid;
    } else if (word == "missing") {
      missing += *line + "; ";
    } else if (word == "crashing") {
      crashing = true;
      break;
    }
  }
  ASSERT_TRUE(crashing) << "the server holder did not start its servers";
  // Its output ends once it died: no server of its holds the pipe.
  while (holder.read_line(std::chrono::seconds(30))) {
  }
  EXPECT_TRUE(holder.output_ended()) << "a server still holds the crashed test's output pipe";
  for (const auto& [name, pid] : servers) {
    const std::vector<std::string> left = wait_until_gone(pid);
    EXPECT_TRUE(left.empty()) << name << " outlived the crashed test: " << left.front();
    if (!left.empty()) {
      kill(pid, SIGKILL);
      killpg(pid, SIGKILL);
    }
  }
  if (!missing.empty()) BALLAST_MISSING("servers that could not start here: " + missing);
}

}  // namespace
}  // namespace ballast::test
