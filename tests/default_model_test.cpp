// The bundled default model (models/tiny-llama) is exactly what scripts/make_default_model.py
// writes, and it loads as a llama-shaped checkpoint.
#include <gtest/gtest.h>

#include "ballast/ballast.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

const std::filesystem::path kModel =
    std::filesystem::path(BALLAST_SOURCE_DIR) / "models/tiny-llama";

TEST(DefaultModel, ScriptReproducesTheBundledFile) {
  BALLAST_REQUIRE_PYTHON("numpy");
  TempDir dir;
  run_python(read_file(std::filesystem::path(BALLAST_SOURCE_DIR) / "scripts/make_default_model.py"),
             {dir.path().string()});
  EXPECT_EQ(read_file(dir / "model.safetensors"), read_file(kModel / "model.safetensors"));
  EXPECT_EQ(read_file(dir / "config.json"), read_file(kModel / "config.json"));
}

TEST(DefaultModel, LoadsAsALlamaCheckpoint) {
  auto loader = make_weight_loader();
  auto meta = loader->get_metadata(WeightSource::file(kModel));
  EXPECT_EQ(meta.tensors.size(), 21u);
  EXPECT_EQ(meta.tensors.at("model.embed_tokens.weight").shape, (Shape{1024, 256}));
  EXPECT_EQ(meta.tensors.at("model.layers.1.self_attn.k_proj.weight").dtype, DType::bf16);
  std::vector<TensorSpec> specs;
  for (const auto& [name, info] : meta.tensors)
    specs.push_back({.name = name, .source = WeightSource::file(kModel)});
  uint64_t bytes = 0;
  for (const auto& t : loader->load_tensors(specs)) bytes += t->nbytes();
  EXPECT_EQ(bytes, meta.total_size_bytes);
}

}  // namespace
}  // namespace ballast::test
