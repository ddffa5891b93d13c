// Hostile `*.index.json` shard maps, each expecting its own ErrorCode when a loader opens the
// index: broken JSON, wrong shapes, names that leave the folder (traversal, absolute paths,
// symlinks), a FIFO where a shard should be, nesting deep enough to exhaust the stack, sizes past
// the limits, shards that are missing or do not hold the tensors the map promises.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <functional>

#include "ballast/ballast.hpp"
#include "support/safetensors_writer.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

namespace fs = std::filesystem;

struct Hostile {
  std::string name;
  // Writes the index (and any files beside it) into `dir`/m/ and returns the index text.
  std::function<std::string(const fs::path& dir)> setup;
  ErrorCode code;
  Limits limits = {};
};

void PrintTo(const Hostile& h, std::ostream* os) { *os << h.name; }

std::string deep(const std::string& open, const std::string& close, int levels) {
  std::string out;
  for (int i = 0; i < levels; ++i) out += open;
  for (int i = 0; i < levels; ++i) out += close;
  return out;
}

std::vector<Hostile> hostile_indexes() {
  using E = ErrorCode;
  Limits small_header;
  small_header.max_header_bytes = 64;
  auto fixed = [](std::string s) { return [s](const fs::path&) { return s; }; };
  return {
      {"empty", fixed(""), E::invalid_format},
      {"not_json", fixed("{\"weight_map\": {"), E::invalid_format},
      {"array", fixed("[1, 2]"), E::invalid_format},
      {"no_weight_map", fixed(R"({"metadata": {}})"), E::invalid_format},
      {"weight_map_is_a_list", fixed(R"({"weight_map": ["a.safetensors"]})"), E::invalid_format},
      {"file_name_is_a_number", fixed(R"({"weight_map": {"x": 7}})"), E::invalid_format},
      {"file_name_is_null", fixed(R"({"weight_map": {"x": null}})"), E::invalid_format},
      {"traversal", fixed(R"({"weight_map": {"x": "../outside.safetensors"}})"), E::invalid_format},
      {"traversal_inside_a_path",
       fixed(R"({"weight_map": {"x": "sub/../../outside.safetensors"}})"), E::invalid_format},
      {"absolute_path", fixed(R"({"weight_map": {"x": "/etc/passwd"}})"), E::invalid_format},
      {"symlink_escape",
       [](const fs::path& dir) {
         fs::create_symlink(dir / "outside.safetensors", dir / "m" / "link.safetensors");
         return std::string(R"({"weight_map": {"x": "link.safetensors"}})");
       },
       E::invalid_format},
      {"deep_metadata",
       fixed("{\"metadata\": " + deep("[", "]", 200'000) + ", \"weight_map\": {}}"),
       E::limit_exceeded},
      {"deep_weight_map_value",
       fixed("{\"weight_map\": {\"x\": " + deep("{\"k\":", "}", 100'000) + "}}"),
       E::limit_exceeded},
      {"larger_than_max_header_bytes",
       fixed(R"({"weight_map": {"x": "model-00001-of-00002.safetensors", "y": "z.safetensors"}})"),
       E::limit_exceeded, small_header},
      {"missing_shard", fixed(R"({"weight_map": {"x": "absent.safetensors"}})"), E::not_found},
      {"shard_is_a_folder",
       [](const fs::path& dir) {
         fs::create_directories(dir / "m" / "folder.safetensors");
         return std::string(R"({"weight_map": {"x": "folder.safetensors"}})");
       },
       E::invalid_argument},
      {"shard_is_a_fifo",  // opening it for reading would block until a writer came
       [](const fs::path& dir) {
         EXPECT_EQ(::mkfifo((dir / "m" / "fifo.safetensors").c_str(), 0600), 0);
         return std::string(R"({"weight_map": {"x": "fifo.safetensors"}})");
       },
       E::invalid_argument},
      {"tensor_missing_from_its_shard",
       [](const fs::path& dir) {
         write_file(dir / "m" / "a.safetensors",
                    safetensors_file({{"y", "F32", {1}, f32_bytes({1})}}));
         return std::string(R"({"weight_map": {"x": "a.safetensors"}})");
       },
       E::invalid_format},
  };
}

class ShardIndexHostile : public testing::TestWithParam<Hostile> {};

TEST_P(ShardIndexHostile, FailsWithItsOwnCode) {
  const Hostile& h = GetParam();
  TempDir dir;
  write_file(dir / "outside.safetensors", safetensors_file({{"x", "F32", {1}, f32_bytes({1})}}));
  fs::create_directories(dir / "m");
  const fs::path index = dir.path() / "m" / "model.safetensors.index.json";
  write_file(index, h.setup(dir.path()));
  WeightLoaderConfig config;
  config.limits = h.limits;
  try {
    auto loader = make_weight_loader(config);
    auto meta = loader->get_metadata(WeightSource::file(index));
    loader->load_tensor({.name = "x", .source = WeightSource::file(index)});
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), h.code) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Table, ShardIndexHostile, testing::ValuesIn(hostile_indexes()),
                         [](const auto& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace ballast::test
