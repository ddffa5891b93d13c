// Interrupted downloads resume in the next process (issue 27), counted in the bytes each server
// sent. Object cache: the fault server's /cut/ mode breaks a download off after N bytes (one
// attempt, no retries), leaving `<hash>.blob.incomplete` and the version it holds; the next
// loader fetches only the rest and the blob hashes right; an object changed in between (a new
// ETag) is downloaded again from zero; `ballast fetch` killed mid-download (SIGKILL) is
// resumed by the next fetch. Hub cache: a partial `blobs/<etag>.incomplete` is continued by
// `ballast fetch`; one whose bytes are wrong fails the sha256 check and is downloaded again
// from zero (huggingface_hub's own leftovers: tests/python/test_hub_partial_interop.py). A
// hard link planted at any partial name is never written through.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <fstream>
#include <iterator>
#include <thread>

#include "ballast/ballast.hpp"
#include "ballast/cache.hpp"
#include "support/fault_server.hpp"
#include "support/process.hpp"
#include "support/safetensors_writer.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr uint64_t kTensorBytes = 2 << 20;
constexpr size_t kTensors = 12;                  // a 24 MiB file
constexpr uint64_t kCutAt = (10 << 20) + 12345;  // the first download breaks off here
// What parsing a header by ranges may fetch: a 64 KiB read-ahead from the start, with room.
constexpr uint64_t kHeaderReads = 128 << 10;

std::string big_file(int seed, size_t count = kTensors) {
  std::vector<StTensor> tensors;
  for (size_t i = 0; i < count; ++i) {
    std::string bytes(kTensorBytes, '\0');
    for (size_t k = 0; k < bytes.size(); ++k) bytes[k] = static_cast<char>(k * 31 + i + seed);
    tensors.push_back({"t" + std::to_string(10 + i), "U8", {kTensorBytes}, std::move(bytes)});
  }
  return safetensors_file(tensors);
}

std::string sha256_of(const std::string& bytes) {
  return sha256_hex(std::as_bytes(std::span(bytes.data(), bytes.size())));
}

// The files of the object cache folder by extension (".blob", ".incomplete", ...).
std::map<std::string, std::vector<fs::path>> cache_files(const fs::path& cache) {
  std::map<std::string, std::vector<fs::path>> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(cache / "objects", ec))
    out[e.path().extension().string()].push_back(e.path());
  return out;
}

class ObjectResume : public FaultServer {
 protected:
  WeightLoaderConfig caching(int retries) const {
    WeightLoaderConfig c = config(retries);
    c.enable_caching = true;
    c.cache_dir = cache_.path();
    c.download_chunk_bytes = 1 << 20;
    return c;
  }
  uint64_t sent(const std::string& path) {
    const json s = stats()["sent"];
    return s.contains("/" + path) ? s["/" + path].get<uint64_t>() : 0;
  }
  // Preloads `path` with no retries: the cut fails it and leaves a partial download.
  uint64_t interrupted_download(const std::string& path) {
    EXPECT_EQ(error_code_of(
                  [&] { make_weight_loader(caching(0))->preload(WeightSource::url(url(path))); },
                  "a broken-off download"),
              ErrorCode::network);
    auto files = cache_files(cache_.path());
    EXPECT_EQ(files[".incomplete"].size(), 1u);
    EXPECT_EQ(files[".blob"].size(), 0u);
    if (files[".incomplete"].size() != 1) return 0;
    return fs::file_size(files[".incomplete"][0]);
  }

  TempDir cache_;
};

TEST_F(ObjectResume, AnInterruptedDownloadResumesInTheNextLoader) {
  const std::string file = big_file(1);
  write_file(dir_ / "big.safetensors", file);
  const std::string path = "cut/" + std::to_string(kCutAt) + "/big.safetensors";
  const uint64_t partial = interrupted_download(path);
  EXPECT_GT(partial, 0u);
  EXPECT_LE(partial, kCutAt);
  const uint64_t first_run = sent(path);

  make_weight_loader(caching(3))->preload(WeightSource::url(url(path)));
  const uint64_t second_run = sent(path) - first_run;
  EXPECT_GE(second_run, file.size() - partial);
  EXPECT_LE(second_run, file.size() - partial + kHeaderReads);  // the rest, and the header
  auto files = cache_files(cache_.path());
  ASSERT_EQ(files[".blob"].size(), 1u);
  EXPECT_EQ(read_file(files[".blob"][0]), file);
  EXPECT_TRUE(files[".incomplete"].empty());
  for (const auto& check : verify_caches({.cache_dir = cache_.path(), .hub_cache = cache_ / "no"}))
    EXPECT_EQ(check.state, CachedBlobCheck::State::ok) << check.blob;
  for (const auto& record : files[".json"])
    EXPECT_EQ(json::parse(read_file(record))["sha256"], sha256_of(file)) << record;
}

TEST_F(ObjectResume, AnObjectChangedSinceTheInterruptionIsDownloadedFromZero) {
  write_file(dir_ / "big.safetensors", big_file(1));
  const std::string path = "cut/" + std::to_string(kCutAt) + "/big.safetensors";
  EXPECT_GT(interrupted_download(path), 0u);
  const uint64_t first_run = sent(path);
  const std::string changed = big_file(2);  // same size, new bytes: a new ETag
  write_file(dir_ / "big.safetensors", changed);

  auto loader = make_weight_loader(caching(3));
  loader->preload(WeightSource::url(url(path)));
  EXPECT_GE(sent(path) - first_run, changed.size());
  auto files = cache_files(cache_.path());
  ASSERT_EQ(files[".blob"].size(), 1u);
  EXPECT_EQ(read_file(files[".blob"][0]), changed);
  EXPECT_TRUE(files[".incomplete"].empty());
  auto tensor = loader->load_tensor({.name = "t10", .source = WeightSource::url(url(path))});
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(tensor->data()), 16),
            changed.substr(changed.size() - kTensors * kTensorBytes, 16));
}

// The checkpoint the partial download's record holds in the object cache `cache`: how many of
// its first bytes a resume keeps (0 when there is none).
uint64_t checkpoint_in(const fs::path& cache) {
  auto files = cache_files(cache);
  for (const auto& record : files[".json"]) {
    if (!record.string().ends_with(".incomplete.json")) continue;
    std::ifstream in(record);
    const json j = json::parse(
        std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()), nullptr,
        false);
    if (j.is_object() && j.contains("length") && j["length"].is_number_unsigned())
      return j["length"].get<uint64_t>();
  }
  return 0;
}

// `ballast fetch` killed (SIGKILL) once its download has written a piece and recorded its
// checkpoint: the partial file stays, and the next fetch continues it after that checkpoint.
TEST_F(ObjectResume, AKilledFetchResumesInTheNextProcess) {
  const std::string file = big_file(5, 24);  // 48 MiB, served at about 6 MiB/s
  write_file(dir_ / "big.safetensors", file);
  const std::string path = "slow/big.safetensors";
  const std::vector<std::string> fetch = {
      cli_path(), "fetch", "-q", "--connections", "1", "--cache-dir", cache_.path().string(),
      url(path)};  // one 16 MiB range at a time: the partial file grows by 16 MiB
  {
    Process first(fetch);
    for (int polls = 0; polls < 3000 && checkpoint_in(cache_.path()) < (16u << 20); ++polls)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_EQ(::kill(first.pid(), SIGKILL), 0);
  }
  auto files = cache_files(cache_.path());
  ASSERT_EQ(files[".incomplete"].size(), 1u) << "the killed fetch left no partial file";
  ASSERT_TRUE(files[".blob"].empty()) << "the fetch finished before it was killed";
  const uint64_t partial = fs::file_size(files[".incomplete"][0]);
  const uint64_t kept = checkpoint_in(cache_.path());
  EXPECT_GE(kept, 16u << 20);
  EXPECT_LE(kept, partial);
  // A range the killed fetch asked for just before it died is counted when the server takes it
  // up: the first run's count is read once it stops moving.
  uint64_t first_run = sent(path);
  for (int polls = 0; polls < 50; ++polls) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const uint64_t now = sent(path);
    if (now == first_run) break;
    first_run = now;
  }
  auto r = run_command(cli_path() + " fetch -q --connections 1 --cache-dir " +
                       shell_quote(cache_.path().string()) + " " + url(path));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const uint64_t second_run = sent(path) - first_run;
  EXPECT_GE(second_run, file.size() - partial);
  EXPECT_LE(second_run, file.size() - kept + kHeaderReads)  // the bytes after the checkpoint
      << "partial " << partial << ", checkpoint " << kept << ", first run " << first_run;
  files = cache_files(cache_.path());
  ASSERT_EQ(files[".blob"].size(), 1u);
  EXPECT_EQ(read_file(files[".blob"][0]), file);
  EXPECT_TRUE(files[".incomplete"].empty());
}

// A hard link to a file outside the cache planted at the partial download's name (its version
// record kept, as an interrupted download leaves it): the partial is not ballast's own, so it
// is discarded and the download starts from zero; the outside file is unchanged and the blob
// right. Before, the download was continued into the outside file, and its bytes taken as the
// object's start (a blob of wrong bytes, recorded with their sha256).
TEST_F(ObjectResume, AHardLinkPlantedAtThePartialNameIsNeverWrittenThrough) {
  const std::string file = big_file(1);
  write_file(dir_ / "big.safetensors", file);
  const std::string path = "cut/" + std::to_string(kCutAt) + "/big.safetensors";
  ASSERT_GT(interrupted_download(path), 0u);
  const fs::path partial = cache_files(cache_.path())[".incomplete"].at(0);
  TempDir elsewhere;
  const fs::path victim = elsewhere / "victim";
  write_file(victim, "precious");
  fs::remove(partial);
  fs::create_hard_link(victim, partial);

  make_weight_loader(caching(3))->preload(WeightSource::url(url(path)));
  EXPECT_EQ(read_file(victim), "precious");
  auto files = cache_files(cache_.path());
  ASSERT_EQ(files[".blob"].size(), 1u);
  EXPECT_EQ(read_file(files[".blob"][0]), file);
  EXPECT_TRUE(files[".incomplete"].empty());
  for (const auto& check : verify_caches({.cache_dir = cache_.path(), .hub_cache = cache_ / "no"}))
    EXPECT_EQ(check.state, CachedBlobCheck::State::ok) << check.blob;
}

class HubResume : public testing::Test {
 protected:
  void SetUp() override {
    write_file(repos_ / "org/big/model.safetensors", file_);
    server_ = std::make_unique<Process>(std::vector<std::string>{
        "/usr/bin/python3", BALLAST_SOURCE_DIR "/tests/servers/hub_server.py",
        repos_.path().string()});
    auto line = server_->read_line(std::chrono::seconds(20));
    ASSERT_TRUE(line) << "the hub server did not start";
    int port = 0;
    std::istringstream(*line) >> port;
    endpoint_ = "http://127.0.0.1:" + std::to_string(port);
    setenv("HF_ENDPOINT", endpoint_.c_str(), 1);
    setenv("HF_HUB_CACHE", hub_.path().c_str(), 1);
    unsetenv("HF_TOKEN");
    unsetenv("HF_HUB_OFFLINE");
  }
  void TearDown() override {
    for (const char* name : {"HF_ENDPOINT", "HF_HUB_CACHE"}) unsetenv(name);
  }
  uint64_t cdn_bytes() {
    auto r = run_command("/usr/bin/python3 -c " +
                         shell_quote("import urllib.request,sys; sys.stdout.write(urllib.request."
                                     "urlopen('" +
                                     endpoint_ + "/stats').read().decode())"));
    const json bytes = json::parse(r.out)["cdn_bytes"];
    return bytes.contains("org/big/model.safetensors")
               ? bytes["org/big/model.safetensors"].get<uint64_t>()
               : 0;
  }
  fs::path blob() const { return hub_ / "models--org--big" / "blobs" / sha256_of(file_); }
  CommandResult fetch() {
    return run_command(cli_path() + " fetch -q hf://org/big/model.safetensors");  // HF_HUB_CACHE
  }

  const std::string file_ = big_file(3);
  TempDir repos_, hub_;
  std::unique_ptr<Process> server_;
  std::string endpoint_;
};

// An interrupted download's blobs/<etag>.incomplete is continued, only the rest fetched.
TEST_F(HubResume, APartialBlobIsContinued) {
  const uint64_t partial = kCutAt;
  fs::create_directories(blob().parent_path());
  write_file(blob().string() + ".incomplete", file_.substr(0, partial));
  auto r = fetch();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GE(cdn_bytes(), file_.size() - partial);
  EXPECT_LE(cdn_bytes(), file_.size() - partial + 2 * kHeaderReads);
  EXPECT_EQ(read_file(blob()), file_);
  EXPECT_FALSE(fs::exists(blob().string() + ".incomplete"));
}

// A continued download whose whole fails its sha256 proves its partial's bytes wrong: they are
// discarded and the file downloaded again from zero, in the same fetch.
TEST_F(HubResume, APartialBlobWithWrongBytesIsDiscardedAndDownloadedFromZero) {
  fs::create_directories(blob().parent_path());
  write_file(blob().string() + ".incomplete", std::string(kCutAt, 'z'));
  auto r = fetch();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GE(cdn_bytes(), file_.size());
  EXPECT_EQ(read_file(blob()), file_);
  EXPECT_FALSE(fs::exists(blob().string() + ".incomplete"));
}

// A hard link to a file outside the cache planted at either partial name the Hub cache
// continues (ours, and huggingface_hub's `<etag>.<8 hex>.incomplete`): it is removed, never
// continued; the outside file is unchanged and the fetch downloads the file whole. Before, the
// download was appended to the outside file.
TEST_F(HubResume, AHardLinkPlantedAtAPartialNameIsNeverWrittenThrough) {
  for (const char* suffix : {".incomplete", ".0123abcd.incomplete"}) {
    SCOPED_TRACE(suffix);
    fs::remove_all(hub_.path() / "models--org--big");
    fs::create_directories(blob().parent_path());
    TempDir elsewhere;
    const fs::path victim = elsewhere / "victim";
    const std::string precious = file_.substr(0, kCutAt);  // even the file's own first bytes
    write_file(victim, precious);
    fs::create_hard_link(victim, blob().string() + suffix);
    auto r = fetch();
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(read_file(victim), precious);
    EXPECT_EQ(read_file(blob()), file_);
    EXPECT_FALSE(fs::exists(blob().string() + suffix));
  }
}

}  // namespace
}  // namespace ballast::test
