// GGUF split files: sibling names from a shard's name, and the three golden shards together
// holding exactly the tensors (names, dtypes, shapes, bytes) of the file llama-gguf-split
// merged from them.
#include <gtest/gtest.h>

#include <map>

#include <nlohmann/json.hpp>

#include "ballast/hash.hpp"
#include "formats/gguf/gguf_parser.hpp"
#include "io/file_source.hpp"
#include "support/test_support.hpp"

namespace ballast {
namespace {

TEST(GgufSplitNames, SiblingsOfAFirstShard) {
  EXPECT_EQ(gguf_split_siblings("/models/llama-00001-of-00003.gguf"),
            (std::vector<std::string>{"/models/llama-00001-of-00003.gguf",
                                      "/models/llama-00002-of-00003.gguf",
                                      "/models/llama-00003-of-00003.gguf"}));
  EXPECT_EQ(gguf_split_siblings("m-00001-of-00001.gguf"),
            std::vector<std::string>{"m-00001-of-00001.gguf"});
}

TEST(GgufSplitNames, AnyShardNamesTheWholeSet) {
  EXPECT_EQ(gguf_split_siblings("a-b-00002-of-00002.gguf"),
            (std::vector<std::string>{"a-b-00001-of-00002.gguf", "a-b-00002-of-00002.gguf"}));
  auto name = parse_gguf_split_name("dir/x-00007-of-00010.gguf");
  ASSERT_TRUE(name);
  EXPECT_EQ(name->prefix, "dir/x");
  EXPECT_EQ(name->index, 7u);
  EXPECT_EQ(name->count, 10u);
}

TEST(GgufSplitNames, OtherNamesAreNotSplits) {
  for (const char* n : {"model.gguf", "x-00001-of-00003.bin", "x-1-of-3.gguf",
                        "x-00000-of-00003.gguf", "x-00004-of-00003.gguf", "-00001-of-00002.gguf",
                        "x00001-of-00002.gguf", "x-00001-of-70000.gguf", "x-00001_of-00002.gguf"})
    EXPECT_TRUE(gguf_split_siblings(n).empty()) << n;
}

struct Stored {
  std::string dtype;
  Shape shape;
  std::string sha256;
  bool operator==(const Stored&) const = default;
};

std::map<std::string, Stored> tensors_of(const std::filesystem::path& path, nlohmann::json& extra) {
  ParseContext ctx;
  ctx.source = open_file_source(path);
  const Index index = make_gguf_parser()->parse(ctx);
  extra = nlohmann::json::parse(index.extra);
  std::map<std::string, Stored> out;
  for (const TensorEntry& t : index.tensors)
    out[t.name] = {std::string(dtype_name(t.dtype)), t.shape,
                   sha256_hex(t.data->read(t.offset, t.nbytes()))};
  return out;
}

TEST(GgufSplitGolden, ShardsTogetherEqualTheMergedFile) {
  BALLAST_REQUIRE_GOLDEN();
  const auto dir = *test::golden_dir() / "gguf";
  const auto shards = gguf_split_siblings((dir / "split-00001-of-00003.gguf").string());
  ASSERT_EQ(shards.size(), 3u);
  std::map<std::string, Stored> all;
  for (size_t i = 0; i < shards.size(); ++i) {
    nlohmann::json extra;
    for (auto& [name, t] : tensors_of(shards[i], extra)) EXPECT_TRUE(all.emplace(name, t).second);
    EXPECT_EQ(extra["split.no"], i);
    EXPECT_EQ(extra["split.count"], 3);
    EXPECT_EQ(extra["split.tensors.count"], 5);
  }
  nlohmann::json merged_extra;
  const auto merged = tensors_of(dir / "merged_by_gguf_split.gguf", merged_extra);
  EXPECT_EQ(merged.size(), 5u);
  EXPECT_EQ(all, merged);
  EXPECT_EQ(merged_extra["split.count"], 0);  // the merge tool's marker for "not split"
}

}  // namespace
}  // namespace ballast
