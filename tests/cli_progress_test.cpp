// The CLI's download progress, for real: `ballast fetch` of a URL served on 127.0.0.1 by a
// server that paces its bytes (256 KiB every 20 ms), run under pseudo-terminals of 100 and 44
// columns (the bar with bytes, rate and ETA redrawn in place, never wider than the terminal, no
// stale or partial line left: a small terminal emulator replays what was written), with stderr a
// pipe (a line every few seconds and a final one, no escape codes), with -q and with
// HF_HUB_DISABLE_PROGRESS_BARS (nothing on stderr).
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <regex>
#include <sstream>

#include "ballast/ballast.hpp"
#include "support/process.hpp"
#include "support/safetensors_writer.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

// Serves FOLDER's files with Range support; bodies over 256 KiB come 256 KiB every 20 ms.
constexpr const char* kPacedServer = R"PY(
import http.server, os, re, sys, time
FOLDER = sys.argv[1]
PIECE = 256 << 10
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args): pass
    def do_HEAD(self): self.serve(True)
    def do_GET(self): self.serve(False)
    def serve(self, head):
        path = os.path.join(FOLDER, os.path.basename(self.path))
        if not os.path.isfile(path):
            self.send_response(404); self.send_header("Content-Length", "0"); self.end_headers()
            return
        data = open(path, "rb").read()
        m = re.fullmatch(r"bytes=(\d+)-(\d+)", self.headers.get("Range", ""))
        first, last = (int(m.group(1)), min(int(m.group(2)), len(data) - 1)) if m else (0, len(data) - 1)
        body = data[first:last + 1]
        self.send_response(206 if m and not head else 200)
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("ETag", '"v1"')
        if m and not head: self.send_header("Content-Range", f"bytes {first}-{last}/{len(data)}")
        self.send_header("Content-Length", str(len(data) if head else len(body)))
        self.end_headers()
        if head: return
        for i in range(0, len(body), PIECE):
            self.wfile.write(body[i:i + PIECE]); self.wfile.flush()
            if len(body) > PIECE: time.sleep(0.02)
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
)PY";

// argv: COLUMNS COMMAND...: runs the command with stderr on a pseudo-terminal of COLUMNS x 24
// (LANG=C.UTF-8), replays what it wrote there on an emulated screen (printable text, \r, \n,
// ESC[nA, ESC[K, ESC[J) and prints JSON: rc, stdout, raw (stderr as written), screen (its
// lines at the end), col (the cursor's column at the end), widest (the most columns a line
// took), unknown (escape codes the emulator does not know).
constexpr const char* kPtyRun = R"PY(
import fcntl, json, os, re, struct, subprocess, sys, termios
cols = int(sys.argv[1])
master, slave = os.openpty()
fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, cols, 0, 0))
env = dict(os.environ, LANG="C.UTF-8")
env.pop("LC_ALL", None); env.pop("LC_CTYPE", None); env.pop("COLUMNS", None)
p = subprocess.Popen(sys.argv[2:], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave, env=env)
os.close(slave)
raw = b""
while True:
    try:
        chunk = os.read(master, 65536)
    except OSError:
        break
    if not chunk:
        break
    raw += chunk
out = p.stdout.read()
rc = p.wait()
text = raw.decode("utf-8", "replace")
rows, row, col, widest, unknown, i = [[]], 0, 0, 0, [], 0
while i < len(text):
    c = text[i]
    if c == "\x1b":
        m = re.match(r"\x1b\[(\d*)([A-Za-z])", text[i:])
        if not m:
            unknown.append(text[i:i + 4]); i += 1; continue
        n, op = int(m.group(1) or 1), m.group(2)
        if op == "A": row = max(0, row - n)
        elif op == "K": rows[row] = rows[row][:col]
        elif op == "J": rows[row] = rows[row][:col]; del rows[row + 1:]
        else: unknown.append(m.group(0))
        i += len(m.group(0)); continue
    if c == "\r": col = 0
    elif c == "\n":
        row += 1; col = 0
        while len(rows) <= row: rows.append([])
    else:
        line = rows[row]
        line.extend([" "] * (col + 1 - len(line)))
        line[col] = c
        col += 1
        widest = max(widest, col)
    i += 1
print(json.dumps({"rc": rc, "stdout": out.decode(), "raw": text, "col": col, "widest": widest,
                  "screen": ["".join(r).rstrip() for r in rows], "unknown": unknown}))
)PY";

class CliProgress : public testing::Test {
 protected:
  void SetUp() override {
    write_file(dir_ / "small.safetensors", safetensors_file({{"w", "U8", {4}, "abcd"}}));
    server_ = std::make_unique<Process>(
        std::vector<std::string>{kDebianPython, "-c", kPacedServer, dir_.path().string()});
    auto line = server_->read_line(std::chrono::seconds(20));
    ASSERT_TRUE(line) << "the paced server did not start";
    std::istringstream(*line) >> port_;
  }

  // 20 MiB, about 2 s to download through the paced server. The library reports a ranged
  // download's progress as its bytes arrive, so the bar moves with a rate and an ETA.
  void write_big_file() {
    std::string bytes(20 << 20, '\0');
    for (size_t i = 0; i < bytes.size(); i += 4096) bytes[i] = static_cast<char>(i / 4096);
    write_file(dir_ / "big.safetensors", safetensors_file({{"w", "U8", {20 << 20}, bytes}}));
  }

  // `ballast fetch URL` of `file` into a fresh cache (so that it downloads), with `extra`.
  std::string fetch_command(const std::string& extra = "",
                            const std::string& file = "small.safetensors") {
    const auto cache = dir_ / ("cache" + std::to_string(++runs_));
    return cli_path() + " fetch " + extra + " --cache-dir " + shell_quote(cache.string()) + " " +
           shell_quote("http://127.0.0.1:" + std::to_string(port_) + "/" + file);
  }

  TempDir dir_;
  std::unique_ptr<Process> server_;
  int port_ = 0, runs_ = 0;
};

// What a command left on a terminal of `columns`: never a line wider than it (nor in its last
// column), no escape the emulator lacks, the cursor at the start of a line, one complete line
// for the file (the URL's start cut, its end kept), and no progress line left behind.
nlohmann::json run_on_terminal(const std::string& command, int columns) {
  nlohmann::json r = nlohmann::json::parse(
      run_python(kPtyRun, {std::to_string(columns), "/bin/sh", "-c", command}));
  const std::string raw = r["raw"];
  EXPECT_EQ(r["rc"], 0) << raw;
  EXPECT_NE(r["stdout"].get<std::string>().find("preloaded"), std::string::npos) << r["stdout"];
  EXPECT_LT(r["widest"].get<int>(), columns) << raw;
  EXPECT_TRUE(r["unknown"].empty()) << r["unknown"];
  EXPECT_EQ(r["col"], 0) << raw;
  int complete = 0;
  for (const std::string line : r["screen"]) {
    EXPECT_EQ(line.find("ETA"), std::string::npos) << "a stale progress line: " << line;
    if (line.find("100%") != std::string::npos) {
      ++complete;
      EXPECT_TRUE(line.starts_with("…")) << line;
      EXPECT_NE(line.find("safetensors"), std::string::npos) << line;
    }
  }
  EXPECT_EQ(complete, 1) << raw;
  return r;
}

TEST_F(CliProgress, TerminalGetsABarThatFitsAndLeavesNoStaleLines) {
  write_big_file();
  const std::string raw =
      run_on_terminal(fetch_command("--connections 1", "big.safetensors"), 100)["raw"];
  // While it downloads: a bar, bytes of the total, a rate and an ETA; then the complete line.
  EXPECT_NE(raw.find("█"), std::string::npos) << raw;
  EXPECT_TRUE(std::regex_search(raw, std::regex(R"(MiB / 20\.0 MiB +\d+\.\d MiB/s  ETA \d+:\d\d)")))
      << raw;
  EXPECT_TRUE(std::regex_search(
      raw, std::regex(R"(100%  20\.0 MiB / 20\.0 MiB +\d+\.\d MiB/s  in \d+:\d\d)")))
      << raw;
  // A narrow terminal: no bar, still within its width.
  const nlohmann::json narrow =
      run_on_terminal(fetch_command("--connections 1", "big.safetensors"), 44);
  EXPECT_EQ(narrow["raw"].get<std::string>().find("█"), std::string::npos) << narrow["raw"];
}

TEST_F(CliProgress, ALogGetsALineEveryFewSecondsAndAFinalOne) {
  write_big_file();
  const auto start = std::chrono::steady_clock::now();
  const auto r = run_command(fetch_command("--connections 1", "big.safetensors"));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find('\033'), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << r.err;
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(r.err.back(), '\n');
  std::vector<std::string> lines;
  std::istringstream in(r.err);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  // One line per 5 s of download at most, then the final line.
  EXPECT_LE(static_cast<double>(lines.size()), 1 + seconds / 5) << r.err;
  EXPECT_NE(lines.back().find("big.safetensors  100%  20.0 MiB / 20.0 MiB"), std::string::npos)
      << r.err;
  EXPECT_NE(lines.back().find(" in 0:"), std::string::npos) << r.err;
}

TEST_F(CliProgress, QuietAndHfHubDisableProgressBarsSayNothing) {
  for (const std::string& prefix : {std::string(), std::string("HF_HUB_DISABLE_PROGRESS_BARS=1 "),
                                    std::string("HF_HUB_DISABLE_PROGRESS_BARS=true ")}) {
    const std::string extra = prefix.empty() ? "-q" : "";
    const auto r = run_command(prefix + fetch_command(extra));
    EXPECT_EQ(r.exit_code, 0) << prefix << r.err;
    EXPECT_EQ(r.err, "") << prefix;
    EXPECT_NE(r.out.find("preloaded"), std::string::npos) << r.out;
  }
  // A false value leaves progress on, as huggingface_hub reads it.
  const auto shown = run_command("HF_HUB_DISABLE_PROGRESS_BARS=0 " + fetch_command());
  EXPECT_NE(shown.err.find("small.safetensors  100%"), std::string::npos) << shown.err;
}

// Every command that downloads shows it (hash, load, convert; fetch above); inspect reads only
// the header, by ranges, and downloads nothing.
TEST_F(CliProgress, EveryCommandThatDownloadsShowsIt) {
  std::string inspect = fetch_command();
  inspect.replace(inspect.find(" fetch "), 7, " inspect ");
  const auto header_only = run_command(inspect);
  EXPECT_EQ(header_only.exit_code, 0) << header_only.err;
  EXPECT_EQ(header_only.err.find("100%"), std::string::npos) << header_only.err;
  for (const std::string command : {"hash", "load", "convert"}) {
    std::string line = fetch_command();
    line.replace(line.find(" fetch "), 7, " " + command + " ");
    if (command == "convert") line += " " + shell_quote((dir_ / "out.safetensors").string());
    const auto r = run_command(line);
    EXPECT_EQ(r.exit_code, 0) << command << r.err;
    EXPECT_NE(r.err.find("small.safetensors  100%"), std::string::npos) << command << r.err;
  }
}

}  // namespace
}  // namespace ballast::test
