// Which files of a folder make up its model, as transformers, diffusers and vLLM decide: the
// shard index, else the canonical file, else one shard set, never merging LoRA adapters,
// variants, Mistral's consolidated file or training state; and `ballast inspect` naming the
// files it chose and those it ignored.
#include <gtest/gtest.h>

#include "ballast/ballast.hpp"
#include "support/safetensors_writer.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

std::string one_tensor(const std::string& name, float value) {
  return safetensors_file({{name, "F32", {1}, f32_bytes({value})}});
}

WeightMetadata metadata_of(const TempDir& dir) {
  return make_weight_loader()->get_metadata(WeightSource::file(dir.path()));
}

std::vector<std::string> tensor_names(const WeightMetadata& meta) {
  std::vector<std::string> names;
  for (const auto& [name, info] : meta.tensors) names.push_back(name);
  return names;
}

std::map<std::string, std::string> ignored(const WeightMetadata& meta) {
  std::map<std::string, std::string> out;
  for (const auto& file : meta.ignored_files) out[file.name] = file.reason;
  return out;
}

std::string error_text(const TempDir& dir) {
  try {
    metadata_of(dir);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(FolderChoice, TheShardIndexWinsAndConsolidatedWeightsBesideItAreIgnored) {
  TempDir dir;
  write_file(dir / "model-00001-of-00002.safetensors", one_tensor("a", 1));
  write_file(dir / "model-00002-of-00002.safetensors", one_tensor("b", 2));
  write_file(dir / "model.safetensors.index.json",
             R"({"weight_map": {"a": "model-00001-of-00002.safetensors",
                                "b": "model-00002-of-00002.safetensors"}})");
  write_file(
      dir / "consolidated.safetensors",
      safetensors_file({{"a", "F32", {1}, f32_bytes({1})}, {"b", "F32", {1}, f32_bytes({2})}}));
  const WeightMetadata meta = metadata_of(dir);
  EXPECT_EQ(tensor_names(meta), (std::vector<std::string>{"a", "b"}));
  ASSERT_EQ(meta.files.size(), 2u);
  EXPECT_TRUE(meta.files[0].ends_with("model-00001-of-00002.safetensors"));
  EXPECT_EQ(ignored(meta), (std::map<std::string, std::string>{
                               {"consolidated.safetensors", "not named in the shard index"}}));
}

TEST(FolderChoice, TheCanonicalFileWinsOverAdaptersVariantsAndOtherFormats) {
  TempDir dir;
  write_file(dir / "model.safetensors", one_tensor("w", 1));
  write_file(dir / "model.fp16.safetensors", one_tensor("w", 2));
  write_file(dir / "adapter_model.safetensors", one_tensor("lora_A", 3));
  write_file(dir / "pytorch_model.bin", "not read");
  write_file(dir / "config.json", "{}");
  const WeightMetadata meta = metadata_of(dir);
  EXPECT_EQ(tensor_names(meta), (std::vector<std::string>{"w"}));
  const auto reasons = ignored(meta);
  ASSERT_EQ(reasons.size(), 3u);
  EXPECT_NE(reasons.at("adapter_model.safetensors").find("LoRA adapter"), std::string::npos);
  EXPECT_NE(reasons.at("model.fp16.safetensors").find("variant"), std::string::npos);
  EXPECT_NE(reasons.at("pytorch_model.bin").find("PyTorch"), std::string::npos);
  // The loaded value is model.safetensors', not the variant's.
  auto w = make_weight_loader()->load_tensor(
      TensorSpec{.name = "w", .source = WeightSource::file(dir.path())});
  EXPECT_EQ(w->as<float>()[0], 1.0f);
}

TEST(FolderChoice, AFolderHoldingOnlyAnAdapterOrOneVariantLoadsIt) {
  TempDir adapter;
  write_file(adapter / "adapter_model.safetensors", one_tensor("lora_A", 1));
  write_file(adapter / "adapter_config.json", "{}");
  EXPECT_EQ(tensor_names(metadata_of(adapter)), (std::vector<std::string>{"lora_A"}));

  TempDir variant;
  write_file(variant / "diffusion_pytorch_model.fp16.safetensors", one_tensor("conv", 1));
  EXPECT_EQ(tensor_names(metadata_of(variant)), (std::vector<std::string>{"conv"}));

  write_file(variant / "diffusion_pytorch_model.bf16.safetensors", one_tensor("conv", 2));
  EXPECT_EQ(error_code_of([&] { metadata_of(variant); }, "two variants"),
            ErrorCode::invalid_argument);
  EXPECT_NE(error_text(variant).find("diffusion_pytorch_model.bf16.safetensors"),
            std::string::npos);
}

TEST(FolderChoice, AShardSetWithoutAnIndexIsOneModelWhenComplete) {
  TempDir dir;
  write_file(dir / "weights-00001-of-00002.safetensors", one_tensor("a", 1));
  write_file(dir / "weights-00002-of-00002.safetensors", one_tensor("b", 2));
  EXPECT_EQ(tensor_names(metadata_of(dir)), (std::vector<std::string>{"a", "b"}));

  std::filesystem::remove(dir / "weights-00002-of-00002.safetensors");
  write_file(dir / "weights-00001-of-00003.safetensors", one_tensor("a", 1));
  std::filesystem::remove(dir / "weights-00001-of-00002.safetensors");
  EXPECT_EQ(error_code_of([&] { metadata_of(dir); }, "an incomplete shard set"),
            ErrorCode::not_found);
  EXPECT_NE(error_text(dir).find("1 of its 3 shards"), std::string::npos) << error_text(dir);
}

TEST(FolderChoice, UnrelatedFilesAreNeverMerged) {
  TempDir dir;
  write_file(dir / "a.safetensors", one_tensor("x", 1));
  write_file(dir / "b.safetensors", one_tensor("y", 2));
  EXPECT_EQ(error_code_of([&] { metadata_of(dir); }, "two unrelated files"),
            ErrorCode::invalid_argument);
  const std::string text = error_text(dir);
  EXPECT_NE(text.find("a.safetensors, b.safetensors"), std::string::npos) << text;
  EXPECT_NE(text.find("name the file"), std::string::npos) << text;
}

TEST(FolderChoice, TrainingStateBesideAPytorchCheckpointIsIgnored) {
  BALLAST_REQUIRE_PYTHON("torch");
  TempDir dir;
  run_python(
      "import sys, torch\n"
      "torch.save({'w': torch.ones(2)}, sys.argv[1] + '/pytorch_model.bin')\n"
      "torch.save({'step': torch.zeros(1)}, sys.argv[1] + '/optimizer.pt')\n"
      "torch.save({'lr': torch.zeros(1)}, sys.argv[1] + '/training_args.bin')\n",
      {dir.path().string()});
  WeightMetadata meta = metadata_of(dir);
  EXPECT_EQ(tensor_names(meta), (std::vector<std::string>{"w"}));
  EXPECT_EQ(ignored(meta).size(), 2u);

  std::filesystem::remove(dir / "pytorch_model.bin");
  run_python("import sys, torch\ntorch.save({'v': torch.ones(3)}, sys.argv[1] + '/weights.pt')\n",
             {dir.path().string()});
  meta = metadata_of(dir);
  EXPECT_EQ(tensor_names(meta), (std::vector<std::string>{"v"}));
  EXPECT_EQ(ignored(meta).at("optimizer.pt"), "training state, not model weights");
}

TEST(FolderChoice, AnEmptyFolderSaysWhatItLookedFor) {
  TempDir dir;
  write_file(dir / "config.json", "{}");
  EXPECT_EQ(error_code_of([&] { metadata_of(dir); }, "an empty folder"), ErrorCode::not_found);
  const std::string text = error_text(dir);
  EXPECT_NE(text.find("model.safetensors"), std::string::npos) << text;
  EXPECT_NE(text.find("*.gguf"), std::string::npos) << text;
}

TEST(FolderChoice, InspectNamesTheFilesItChoseAndThoseItIgnored) {
  TempDir dir;
  write_file(dir / "model.safetensors", one_tensor("w", 1));
  write_file(dir / "adapter_model.safetensors", one_tensor("lora_A", 3));
  const std::string folder = shell_quote(dir.path().string());
  CommandResult text = run_command(cli_path() + " inspect " + folder);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("ignored:\n  adapter_model.safetensors  (a LoRA adapter"),
            std::string::npos)
      << text.out;

  CommandResult json = run_command(cli_path() + " inspect --json " + folder);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto parsed = nlohmann::json::parse(json.out);
  ASSERT_EQ(parsed["files"].size(), 1u);
  EXPECT_TRUE(parsed["files"][0].get<std::string>().ends_with("model.safetensors"));
  ASSERT_EQ(parsed["ignored_files"].size(), 1u);
  EXPECT_EQ(parsed["ignored_files"][0]["name"], "adapter_model.safetensors");
}

}  // namespace
}  // namespace ballast::test
