// The Hub workflow of `hf download` and llama.cpp's -hf, against the Hub stand-in
// (tests/servers/hub_server.py on 127.0.0.1): `ballast fetch` of a whole snapshot (configs,
// tokenizer, weights) with --include / --exclude and the snapshot path as the last line, repo
// ids without an organisation, GGUF quantization tags (split sets whole), --cache-dir as the
// Hub cache, and one distinct, actionable error for each way a Hub request fails: repository,
// revision or file not found, gated or private without a token, offline with nothing cached.
#include <gtest/gtest.h>
#include <stdlib.h>

#include "ballast/ballast.hpp"
#include "support/process.hpp"
#include "support/safetensors_writer.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kVariables[] = {
    "HF_ENDPOINT",   "HF_HOME",        "HF_HUB_CACHE",           "HF_TOKEN",
    "HF_TOKEN_PATH", "HF_HUB_OFFLINE", "HUGGING_FACE_HUB_TOKEN", "TRANSFORMERS_OFFLINE"};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

class HubWorkflow : public testing::Test {
 protected:
  void SetUp() override {
    write_file(repos_ / "org/model/config.json", R"({"model_type": "tiny"})");
    write_file(repos_ / "org/model/tokenizer.json", R"({"version": "1.0"})");
    write_file(repos_ / "org/model/tokenizer.model", std::string("\x0a\x05hello\x00", 8));
    write_file(repos_ / "org/model/docs/notes.txt", "notes\n");
    write_file(repos_ / "org/model/model.safetensors",
               safetensors_file({{"w", "U8", {64}, std::string(64, 'w')}}));
    write_file(repos_ / "_/gpt2/config.json", R"({"model_type": "gpt2"})");
    write_file(repos_ / "_/gpt2/model.safetensors",
               safetensors_file({{"wte", "U8", {8}, std::string(8, 'e')}}));
    write_file(repos_ / "gated/llama/model.safetensors",
               safetensors_file({{"w", "U8", {4}, "gate"}}));
    write_file(repos_ / "private/secret/model.safetensors",
               safetensors_file({{"w", "U8", {4}, "priv"}}));
    for (const char* name : kVariables) unsetenv(name);
    setenv("HF_HOME", (home_ / "hf").c_str(), 1);
    setenv("HF_HUB_CACHE", cache().c_str(), 1);
    server_ = std::make_unique<Process>(std::vector<std::string>{
        kDebianPython, BALLAST_SOURCE_DIR "/tests/servers/hub_server.py", repos_.path().string()});
    auto line = server_->read_line(std::chrono::seconds(20));
    if (!line) BALLAST_MISSING("the Hub stand-in (tests/servers/hub_server.py) did not start");
    int port = 0;
    std::istringstream(*line) >> port;
    endpoint_ = "http://127.0.0.1:" + std::to_string(port);
    setenv("HF_ENDPOINT", endpoint_.c_str(), 1);
  }

  void TearDown() override {
    for (const char* name : kVariables) unsetenv(name);
  }

  fs::path cache() const { return home_ / "hub"; }

  static CommandResult cli(const std::string& args) {
    return run_command(cli_path() + " " + args + " --timeout 10 --retries 1");
  }

  static std::string commit_of(const std::string& repo) {
    return run_python(
        "import hashlib,sys; print(hashlib.sha1(sys.argv[1].encode()).hexdigest(), "
        "end='')",
        {repo});
  }

  fs::path snapshot(const fs::path& hub_cache, const std::string& repo) const {
    std::string folder = "models--" + repo;
    for (size_t at = folder.find('/'); at != std::string::npos; at = folder.find('/'))
      folder.replace(at, 1, "--");
    return hub_cache / folder / "snapshots" / commit_of(repo);
  }

  static std::vector<std::string> files_under(const fs::path& folder) {
    std::vector<std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(folder))
      if (fs::is_regular_file(e.path()))
        out.push_back(e.path().lexically_relative(folder).generic_string());
    std::ranges::sort(out);
    return out;
  }

  json hub_requests() {
    auto r = run_command("/usr/bin/python3 -c " +
                         shell_quote("import urllib.request,sys; sys.stdout.write(urllib.request."
                                     "urlopen('" +
                                     endpoint_ + "/stats').read().decode())"));
    return json::parse(r.out)["hub_requests"];
  }

  // Runs a command expected to fail with one `ballast: error:` line holding every one of
  // `expected`.
  static void expect_error(const std::string& args, std::initializer_list<const char*> expected) {
    const CommandResult r = cli(args);
    EXPECT_EQ(r.exit_code, 1) << args << "\n" << r.err;
    EXPECT_EQ(lines_of(r.err).size(), 1u) << args << "\n" << r.err;
    for (const char* text : expected)
      EXPECT_NE(r.err.find(text), std::string::npos) << args << ": no '" << text << "' in\n"
                                                     << r.err;
  }

  TempDir repos_, home_;
  std::unique_ptr<Process> server_;
  std::string endpoint_;
};

TEST_F(HubWorkflow, FetchDownloadsTheWholeSnapshotAndPrintsItsPathLast) {
  const CommandResult r = cli("fetch hf://org/model");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const fs::path snap = snapshot(cache(), "org/model");
  const auto out = lines_of(r.out);
  ASSERT_EQ(out.size(), 2u) << r.out;
  EXPECT_EQ(out[0].find("fetched hf://org/model (commit " + commit_of("org/model") + "): 5 files"),
            0u)
      << out[0];
  EXPECT_EQ(out.back(), snap.string());
  EXPECT_EQ(files_under(snap),
            (std::vector<std::string>{"config.json", "docs/notes.txt", "model.safetensors",
                                      "tokenizer.json", "tokenizer.model"}));
  for (const auto& file : files_under(snap)) {
    EXPECT_TRUE(fs::is_symlink(snap / file)) << file;
    EXPECT_EQ(read_file(snap / file), read_file(repos_ / "org/model" / file)) << file;
  }
  EXPECT_EQ(read_file(cache() / "models--org--model/refs/main"), commit_of("org/model"));
  // The loader still reads only the weights.
  const CommandResult listed = cli("inspect --json hf://org/model");
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_EQ(json::parse(listed.out)["tensors"].size(), 1u);
  // Quiet: stdout is the path alone, as `hf download --quiet`.
  const CommandResult quiet = cli("fetch -q hf://org/model");
  ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_EQ(quiet.out, snap.string() + "\n");
}

TEST_F(HubWorkflow, IncludeAndExcludeSelectTheSnapshotsFiles) {
  struct Case {
    std::string args;
    std::vector<std::string> files;
  };
  const Case cases[] = {
      {"--include '*.json'", {"config.json", "tokenizer.json"}},
      {"--include '*.json' --exclude 'tokenizer*'", {"config.json"}},
      {"--include 'docs/'", {"docs/notes.txt"}},
      {"--exclude '*.safetensors' --exclude 'docs/*'",
       {"config.json", "tokenizer.json", "tokenizer.model"}},
      {"--include 'tokenizer.*' --include '*.safetensors'",
       {"model.safetensors", "tokenizer.json", "tokenizer.model"}},
  };
  int n = 0;
  for (const Case& c : cases) {
    const fs::path dir = home_ / ("c" + std::to_string(n++));
    const CommandResult r =
        cli("fetch -q --cache-dir " + dir.string() + " " + c.args + " hf://org/model");
    ASSERT_EQ(r.exit_code, 0) << c.args << "\n" << r.err;
    EXPECT_EQ(files_under(snapshot(dir, "org/model")), c.files) << c.args;
  }
  expect_error("fetch --include '*.onnx' hf://org/model",
               {"none of the repository's 5 files matches --include / --exclude"});
  expect_error("fetch --include '*.json' hf://org/model/config.json",
               {"--include and --exclude apply to a whole repository"});
}

TEST_F(HubWorkflow, ASnapshotsWeightsAreProbedBeforeTheyAreDownloaded) {
  // A header whose tensor needs 2 MiB in a 1 MiB file: refused from ranged reads.
  write_file(repos_ / "org/hostile/config.json", "{}");
  write_file(repos_ / "org/hostile/model.safetensors",
             safetensors_file({{"w", "U8", {2 << 20}, std::string(1 << 20, 'x')}}));
  const CommandResult r = cli("fetch hf://org/hostile");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("invalid_format"), std::string::npos) << r.err;
  const fs::path repo = cache() / "models--org--hostile";
  EXPECT_FALSE(fs::exists(snapshot(cache(), "org/hostile") / "model.safetensors"));
  if (fs::exists(repo / "blobs")) {
    for (const auto& blob : fs::directory_iterator(repo / "blobs")) {
      EXPECT_LT(fs::file_size(blob.path()), 1u << 20) << "the hostile file was downloaded";
    }
  }
}

TEST_F(HubWorkflow, RepoIdsWithoutAnOrganisation) {
  const CommandResult r = cli("fetch hf://gpt2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const fs::path snap = snapshot(cache(), "gpt2");
  EXPECT_EQ(snap.parent_path().parent_path().filename(), "models--gpt2");
  EXPECT_EQ(lines_of(r.out).back(), snap.string());
  EXPECT_EQ(files_under(snap), (std::vector<std::string>{"config.json", "model.safetensors"}));
  for (const char* source : {"hf://gpt2", "hf://gpt2@main/model.safetensors"}) {
    const CommandResult listed = cli(std::string("inspect --json ") + source);
    ASSERT_EQ(listed.exit_code, 0) << source << "\n" << listed.err;
    EXPECT_TRUE(json::parse(listed.out)["tensors"][0]["name"] == "wte") << listed.out;
  }
}

TEST_F(HubWorkflow, CacheDirIsTheHubCacheForHfSources) {
  const fs::path dir = home_ / "elsewhere";
  const CommandResult file =
      cli("fetch --cache-dir " + dir.string() + " hf://org/model/config.json");
  ASSERT_EQ(file.exit_code, 0) << file.err;
  EXPECT_EQ(lines_of(file.out).back(), (snapshot(dir, "org/model") / "config.json").string());
  const CommandResult load = cli("hash --cache-dir " + dir.string() + " hf://gpt2");
  ASSERT_EQ(load.exit_code, 0) << load.err;
  EXPECT_TRUE(fs::is_regular_file(snapshot(dir, "gpt2") / "model.safetensors"));
  EXPECT_FALSE(fs::exists(cache())) << "HF_HUB_CACHE was written despite --cache-dir";
}

TEST_F(HubWorkflow, EachFailureHasItsOwnActionableError) {
  for (const char* command : {"fetch", "hash"}) {
    const std::string c = command;
    expect_error(c + " hf://org/missing", {"repository not found", "HTTP 404, RepoNotFound"});
    expect_error(c + " hf://org/model@nope", {"revision not found", "RevisionNotFound"});
    expect_error(c + " hf://org/model/nope.safetensors",
                 {"file not found", "EntryNotFound", "hf://org/model@main/nope.safetensors"});
    expect_error(c + " hf://gated/llama", {"gated repository", "HTTP 401, GatedRepo",
                                           "set HF_TOKEN or run `hf auth login`"});
    expect_error(c + " hf://private/secret",
                 {"repository not found, or private or gated", "HTTP 401, RepoNotFound",
                  "\"Invalid username or password.\"", "set HF_TOKEN or run `hf auth login`"});
  }
  // With a token the Hub refuses, the error says so, and never shows the token.
  setenv("HF_TOKEN", "hf_wrong_secret", 1);
  const CommandResult r = cli("fetch hf://private/secret");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("the token (HF_TOKEN or the token file) has no access"), std::string::npos)
      << r.err;
  EXPECT_EQ((r.out + r.err).find("hf_wrong_secret"), std::string::npos);
  // The right token gets in.
  setenv("HF_TOKEN", "hf_test_token", 1);
  const CommandResult in = cli("fetch -q hf://private/secret");
  EXPECT_EQ(in.exit_code, 0) << in.err;
  EXPECT_EQ(in.out, snapshot(cache(), "private/secret").string() + "\n");
}

// The Hub answers for a file from another commit than the listing names (repos named "moving"
// in the stand-in): the fetch fails naming both commits and leaves no ref and no snapshot
// folder. Before, it exited 0 with an empty snapshot of the listed commit, refs/main naming it,
// and a ref named after that commit.
TEST_F(HubWorkflow, AFileAnsweredFromAnotherCommitFailsTheFetchNamingTheMismatch) {
  write_file(repos_ / "org/moving/config.json", R"({"model_type": "tiny"})");
  write_file(repos_ / "org/moving/model.safetensors", safetensors_file({{"w", "U8", {4}, "move"}}));
  const std::string listed = commit_of("org/moving"), moved = commit_of("org/moving@moved");
  expect_error("fetch hf://org/moving", {listed.c_str(), moved.c_str()});
  const fs::path repo = cache() / "models--org--moving";
  EXPECT_FALSE(fs::exists(repo / "refs")) << "a ref was written";
  EXPECT_FALSE(fs::exists(repo / "snapshots")) << "a snapshot folder was made";
}

TEST_F(HubWorkflow, OfflineWithNothingCachedSaysWhatToRun) {
  setenv("HF_HUB_OFFLINE", "1", 1);
  expect_error("fetch hf://org/model",
               {"offline (HF_HUB_OFFLINE)", "not cached",
                "run `ballast fetch hf://org/model` without HF_HUB_OFFLINE"});
  expect_error("fetch hf://org/model@dev",
               {"not cached", "run `ballast fetch hf://org/model@dev` without HF_HUB_OFFLINE"});
  expect_error("hash hf://org/model/model.safetensors",
               {"not cached", "`ballast fetch hf://org/model/model.safetensors`"});
  expect_error("inspect hf://org/model", {"not cached", "`ballast fetch hf://org/model`"});
  expect_error("fetch hf://gpt2@main/config.json",
               {"not cached", "`ballast fetch hf://gpt2@main/config.json`"});
  expect_error("inspect hf://org/model-GGUF:Q4_K_M",
               {"not cached", "`ballast fetch hf://org/model-GGUF`"});
  for (const auto& request : hub_requests())
    EXPECT_EQ(request.get<std::string>().find("/org/"), std::string::npos) << request;
  // Once fetched, the same commands work offline without a request.
  unsetenv("HF_HUB_OFFLINE");
  ASSERT_EQ(cli("fetch -q hf://org/model").exit_code, 0);
  setenv("HF_HUB_OFFLINE", "1", 1);
  const size_t before = hub_requests().size();
  const CommandResult r = cli("fetch --include '*.json' hf://org/model");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("from the cache"), std::string::npos) << r.out;
  EXPECT_EQ(lines_of(r.out).back(), snapshot(cache(), "org/model").string());
  EXPECT_EQ(cli("hash hf://org/model").exit_code, 0);
  EXPECT_EQ(hub_requests().size(), before);
}

TEST_F(HubWorkflow, AQuantizationTagFetchesItsGgufFilesSplitSetsWhole) {
  BALLAST_REQUIRE_GOLDEN();
  const fs::path gguf = *golden_dir() / "gguf";
  const fs::path repo = repos_ / "org/model-GGUF";
  fs::create_directories(repo);
  for (int i = 1; i <= 3; ++i)
    fs::copy_file(gguf / ("split-0000" + std::to_string(i) + "-of-00003.gguf"),
                  repo / ("model-Q4_K_M-0000" + std::to_string(i) + "-of-00003.gguf"));
  fs::copy_file(gguf / "merged_by_gguf_split.gguf", repo / "model-Q8_0.gguf");
  fs::copy_file(gguf / "merged_by_gguf_split.gguf", repo / "mmproj-model-f16.gguf");
  write_file(repo / "README.md", "# model\n");
  // A tag is available when it names the repo's GGUF file(s).
  auto loader = make_weight_loader();
  EXPECT_TRUE(loader->is_available(parse_source_uri("hf://org/model-GGUF:Q4_K_M")));
  EXPECT_FALSE(loader->is_available(parse_source_uri("hf://org/model-GGUF:Q2_K")));
  const CommandResult r = cli("fetch hf://org/model-GGUF:q4_k_m");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const fs::path snap = snapshot(cache(), "org/model-GGUF");
  EXPECT_EQ(lines_of(r.out).back(), (snap / "model-Q4_K_M-00001-of-00003.gguf").string());
  EXPECT_EQ(files_under(snap), (std::vector<std::string>{"model-Q4_K_M-00001-of-00003.gguf",
                                                         "model-Q4_K_M-00002-of-00003.gguf",
                                                         "model-Q4_K_M-00003-of-00003.gguf"}));
  // The tag loads as the whole split set: the merged file's five tensors, the same bytes.
  const CommandResult tagged = cli("hash --json hf://org/model-GGUF:Q4_K_M");
  ASSERT_EQ(tagged.exit_code, 0) << tagged.err;
  const CommandResult merged =
      run_command(cli_path() + " hash --json " + (gguf / "merged_by_gguf_split.gguf").string());
  ASSERT_EQ(merged.exit_code, 0) << merged.err;
  EXPECT_EQ(json::parse(tagged.out)["tensors"], json::parse(merged.out)["tensors"]);
  EXPECT_EQ(json::parse(tagged.out)["tensors"].size(), 5u);
  const CommandResult single = cli("fetch -q hf://org/model-GGUF:Q8_0");
  ASSERT_EQ(single.exit_code, 0) << single.err;
  EXPECT_EQ(single.out, (snap / "model-Q8_0.gguf").string() + "\n");
  expect_error("fetch hf://org/model-GGUF:Q5_K_M",
               {"no .gguf file matches the quantization tag 'Q5_K_M'",
                "the repository's tags: Q4_K_M, Q8_0"});
  // Offline, the tag resolves from the cached snapshot.
  setenv("HF_HUB_OFFLINE", "1", 1);
  EXPECT_EQ(cli("hash hf://org/model-GGUF:Q8_0").exit_code, 0);
}

}  // namespace
}  // namespace ballast::test
