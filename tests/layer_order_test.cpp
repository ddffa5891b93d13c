// The layers of src/ (docs/design.md, "Layers and the data path") and the rule that
// dependencies point down: a file of one layer includes the public API, its own layer and the
// layers below it, never a layer above it nor a peer of its own rank. Read from the includes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

// Higher ranks sit above lower ones; layers of one rank are peers that do not see each other.
const std::map<std::string, int> kLayerRank = {
    {"util", 0},   {"core", 1}, {"io", 2},     {"formats", 2},     {"transform", 2},
    {"remote", 3}, {"cuda", 3}, {"loader", 4}, {"distributed", 5},
};

struct Include {
  std::string file;   // relative to src/
  std::string layer;  // the included header's first folder
};

std::vector<Include> project_includes_of(const fs::path& file) {
  static const std::regex include(R"(^\s*#\s*include\s*"([a-z_]+)/)");
  std::vector<Include> out;
  std::ifstream in(file);
  std::string line;
  std::smatch match;
  while (std::getline(in, line))
    if (std::regex_search(line, match, include)) out.push_back({file.string(), match[1]});
  return out;
}

TEST(LayerOrder, EveryFolderOfSrcIsALayer) {
  for (const auto& entry : fs::directory_iterator(fs::path(BALLAST_SOURCE_DIR) / "src")) {
    if (!entry.is_directory()) continue;
    EXPECT_TRUE(kLayerRank.contains(entry.path().filename().string()))
        << entry.path() << " is in no layer: add it to kLayerRank and docs/design.md";
  }
}

TEST(LayerOrder, NoLayerIncludesALayerAboveItOrAPeer) {
  const fs::path src = fs::path(BALLAST_SOURCE_DIR) / "src";
  size_t checked = 0;
  for (const auto& [layer, rank] : kLayerRank) {
    for (const auto& entry : fs::recursive_directory_iterator(src / layer)) {
      const std::string ext = entry.path().extension().string();
      if (ext != ".cpp" && ext != ".hpp" && ext != ".cu" && ext != ".cuh") continue;
      for (const Include& inc : project_includes_of(entry.path())) {
        ++checked;
        if (inc.layer == "ballast" || inc.layer == layer) continue;
        auto it = kLayerRank.find(inc.layer);
        ASSERT_NE(it, kLayerRank.end()) << inc.file << " includes the unknown layer " << inc.layer;
        EXPECT_LT(it->second, rank) << fs::relative(inc.file, src) << " (" << layer << ") includes "
                                    << inc.layer << "/, which is not below it";
      }
    }
  }
  EXPECT_GT(checked, 100u);  // the scan found the sources
}

TEST(LayerOrder, EntryPointsIncludeOnlyThePublicApi) {
  const fs::path root(BALLAST_SOURCE_DIR);
  for (const fs::path& folder : {root / "tools", root / "python" / "src"})
    for (const auto& entry : fs::recursive_directory_iterator(folder)) {
      const std::string ext = entry.path().extension().string();
      if (ext != ".cpp" && ext != ".hpp") continue;
      for (const Include& inc : project_includes_of(entry.path()))
        EXPECT_EQ(inc.layer, "ballast") << inc.file << " includes " << inc.layer << "/";
    }
}

}  // namespace
