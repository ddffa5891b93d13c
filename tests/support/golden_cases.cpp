// Golden-corpus test cases (see golden_cases.hpp).
#include "support/golden_cases.hpp"

#include <cctype>
#include <stdexcept>

#include "support/test_support.hpp"

namespace ballast::test {

using nlohmann::json;

std::vector<std::string> golden_case_paths(const std::function<bool(const json&)>& keep) {
  std::vector<std::string> paths;
  const auto& manifest = golden_manifest();
  if (manifest.contains("files"))
    for (const auto& f : manifest["files"])
      if (!keep || keep(f)) paths.push_back(f["path"]);
  if (paths.empty()) paths.push_back("absent");
  return paths;
}

std::string golden_case_name(const testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

const json& golden_entry(const std::string& path) {
  for (const auto& f : golden_manifest()["files"])
    if (f["path"] == path) return f;
  throw std::runtime_error("no manifest entry " + path);
}

void apply_golden_raw_layout(const json& entry, WeightSource& source) {
  if (entry["format"] != "raw") return;
  const json& args = entry["format_info"]["reader_args"];
  source.format = WeightFormat::raw();
  source.raw_layout = RawLayout{*parse_dtype(args["dtype"].get<std::string>()),
                                args["shape"].get<Shape>(), args["offset"].get<uint64_t>()};
}

void expect_golden_tensors(WeightLoader& loader, const WeightSource& source, const json& entry) {
  if (entry["expect"] == "error") {
    EXPECT_THROW(
        {
          auto meta = loader.get_metadata(source);
          for (const auto& [name, info] : meta.tensors)
            loader.load_tensor(TensorSpec{.name = name, .source = source});
        },
        Error);
    return;
  }
  WeightMetadata meta = loader.get_metadata(source);
  EXPECT_EQ(to_string(meta.format), entry["format"].get<std::string>());
  for (auto& [name, want] : entry["tensors"].items()) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(meta.tensors.count(name)) << "missing tensor " << name;
    auto tensor = loader.load_tensor(TensorSpec{.name = name, .source = source});
    EXPECT_EQ(sha256_hex(*tensor), want["sha256"].get<std::string>());
  }
}

}  // namespace ballast::test
