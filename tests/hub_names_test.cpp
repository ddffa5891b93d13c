// The Hub workflow's pure parts: hf:// names (repo ids without an organisation, GGUF
// quantization tags, revisions), --include / --exclude with huggingface_hub's
// filter_repo_objects rules, and which .gguf files a quantization tag picks (llama.cpp's -hf).
#include <gtest/gtest.h>

#include "ballast/ballast.hpp"
#include "remote/hub_gguf_tag.hpp"
#include "remote/hub_patterns.hpp"

namespace ballast::test {
namespace {

const HuggingFaceSource& hub_of(const WeightSource& s) {
  return std::get<HuggingFaceSource>(s.location);
}

TEST(HubNames, RepoIdsWithAndWithoutAnOrganisation) {
  const auto whole = parse_source_uri("hf://org/model");
  EXPECT_EQ(hub_of(whole).repo_id, "org/model");
  EXPECT_EQ(hub_of(whole).filename, "");
  EXPECT_FALSE(hub_of(whole).revision);
  const auto file = parse_source_uri("hf://org/model@dev/sub/model.safetensors");
  EXPECT_EQ(hub_of(file).repo_id, "org/model");
  EXPECT_EQ(hub_of(file).revision, "dev");
  EXPECT_EQ(hub_of(file).filename, "sub/model.safetensors");
  EXPECT_EQ(hub_of(parse_source_uri("hf://gpt2")).repo_id, "gpt2");
  const auto gpt2 = parse_source_uri("hf://gpt2@main/config.json");
  EXPECT_EQ(hub_of(gpt2).repo_id, "gpt2");
  EXPECT_EQ(hub_of(gpt2).revision, "main");
  EXPECT_EQ(hub_of(gpt2).filename, "config.json");
  EXPECT_EQ(describe(gpt2), "hf://gpt2@main/config.json");
}

TEST(HubNames, QuantizationTags) {
  for (const char* text : {"hf://org/model-GGUF:Q4_K_M@v1", "hf://org/model-GGUF@v1:Q4_K_M"}) {
    const auto s = parse_source_uri(text);
    EXPECT_EQ(hub_of(s).repo_id, "org/model-GGUF") << text;
    EXPECT_EQ(hub_of(s).quant_tag, "Q4_K_M") << text;
    EXPECT_EQ(hub_of(s).revision, "v1") << text;
    EXPECT_EQ(describe(s), "hf://org/model-GGUF:Q4_K_M@v1") << text;
  }
  const auto plain = parse_source_uri("hf://org/model-GGUF:ud-q4_k_xl");
  EXPECT_EQ(hub_of(plain).quant_tag, "ud-q4_k_xl");
  EXPECT_FALSE(hub_of(plain).revision);
  EXPECT_EQ(hub_of(parse_source_uri("hf://tiny:Q8_0")).repo_id, "tiny");
}

TEST(HubNames, MalformedNamesAreUsageErrors) {
  for (const char* text : {"hf://", "hf://org/", "hf:///model", "hf://org/model@",
                           "hf://org/model:", "hf://a/b:Q4@x:Q8", "hf://org/mo del",
                           "hf://org/-model", "hf://org/model.", "hf://org/a--b", "hf://org/a..b",
                           "hf://org/model:Q4/file.gguf", "hf://org/model:Q4$"}) {
    try {
      parse_source_uri(text);
      ADD_FAILURE() << text << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << text;
      EXPECT_NE(std::string(e.what()).find("hf://[org/]name[:QUANT][@revision][/path]"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(HubPatterns, FollowFilterRepoObjects) {
  const std::vector<std::string> none;
  using V = std::vector<std::string>;
  EXPECT_TRUE(hub_path_selected("config.json", none, none));
  EXPECT_TRUE(hub_path_selected("config.json", V{"*.json"}, none));
  EXPECT_FALSE(hub_path_selected("model.safetensors", V{"*.json"}, none));
  // '*' crosses '/', matching is case-sensitive, a leading '.' is matched like any character.
  EXPECT_TRUE(hub_path_selected("sub/deep/a.json", V{"*.json"}, none));
  EXPECT_FALSE(hub_path_selected("CONFIG.JSON", V{"*.json"}, none));
  EXPECT_TRUE(hub_path_selected(".gitattributes", V{"*"}, none));
  EXPECT_FALSE(hub_path_selected(".gitattributes", none, V{".*"}));
  // "dir/" is everything under dir; '\' is a separator, not an escape.
  EXPECT_TRUE(hub_path_selected("onnx/model.onnx", V{"onnx/"}, none));
  EXPECT_FALSE(hub_path_selected("onnx.txt", V{"onnx/"}, none));
  EXPECT_TRUE(hub_path_selected("onnx/model.onnx", V{"onnx\\*"}, none));
  // Excludes win over includes; [] and ? as fnmatch has them.
  EXPECT_FALSE(hub_path_selected("tokenizer.json", V{"*.json"}, V{"tokenizer*"}));
  EXPECT_TRUE(hub_path_selected("model-00001.bin", V{"model-0000[0-9].bin"}, none));
  EXPECT_FALSE(hub_path_selected("model-0000a.bin", V{"model-0000[!a-z].bin"}, none));
  EXPECT_TRUE(hub_path_selected("a.md", V{"?.md"}, none));
}

const std::vector<std::string> kGgufRepo = {"README.md",
                                            "model-IQ4_XS.gguf",
                                            "model-Q4_K_M-00001-of-00003.gguf",
                                            "model-Q4_K_M-00002-of-00003.gguf",
                                            "model-Q4_K_M-00003-of-00003.gguf",
                                            "model-Q4_K_S.gguf",
                                            "model.Q8_0.gguf",
                                            "mmproj-model-Q8_0.gguf",
                                            "UD/model-UD-Q4_K_XL.gguf"};

TEST(HubGgufTags, PickTheFileOrTheWholeSplitSetCaseInsensitively) {
  EXPECT_EQ(gguf_files_for_tag(kGgufRepo, "q4_k_m", "hf://r"),
            (std::vector<std::string>{"model-Q4_K_M-00001-of-00003.gguf",
                                      "model-Q4_K_M-00002-of-00003.gguf",
                                      "model-Q4_K_M-00003-of-00003.gguf"}));
  EXPECT_EQ(gguf_files_for_tag(kGgufRepo, "Q8_0", "hf://r"),
            std::vector<std::string>{"model.Q8_0.gguf"});  // never the mmproj file
  EXPECT_EQ(gguf_files_for_tag(kGgufRepo, "UD-Q4_K_XL", "hf://r"),
            std::vector<std::string>{"UD/model-UD-Q4_K_XL.gguf"});
  EXPECT_EQ(gguf_files_for_tag(kGgufRepo, "iq4_xs", "hf://r"),
            std::vector<std::string>{"model-IQ4_XS.gguf"});
}

TEST(HubGgufTags, NoMatchListsTheRepositorysTags) {
  for (const char* tag : {"Q4_K", "Q4", "Q5_K_M", "4_K_M", "gguf"}) {
    try {
      gguf_files_for_tag(kGgufRepo, tag, "hf://r");
      ADD_FAILURE() << tag << " matched";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::not_found);
      EXPECT_NE(std::string(e.what()).find("the repository's tags: IQ4_XS, Q4_K_M, Q4_K_S, "
                                           "Q4_K_XL, Q8_0"),
                std::string::npos)
          << e.what();
    }
  }
  try {
    gguf_files_for_tag({"README.md", "model.safetensors"}, "Q4_K_M", "hf://r");
    ADD_FAILURE() << "a repo without .gguf files matched";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has no .gguf model files"), std::string::npos);
  }
}

TEST(HubGgufTags, ASplitSetMissingAPartIsAnError) {
  const std::vector<std::string> files = {"m-Q4_0-00001-of-00002.gguf"};
  try {
    gguf_files_for_tag(files, "Q4_0", "hf://r");
    ADD_FAILURE() << "an incomplete split set was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::not_found);
    EXPECT_NE(std::string(e.what()).find("misses 1 of its 2 parts, the first "
                                         "m-Q4_0-00002-of-00002.gguf"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace ballast::test
