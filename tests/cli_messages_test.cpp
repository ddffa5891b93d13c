// Errors that help: a wrong tensor name lists the closest names (from the library, so the
// Python package says the same), and data that runs past the end of its file reads
// "truncated: expected N bytes, file has M" in every format (safetensors, numpy, GGUF,
// PyTorch, ONNX, raw), as `ballast inspect` prints it.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "ballast/ballast.hpp"
#include "support/safetensors_writer.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

std::string u64_le(uint64_t v) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(v >> (8 * i));
  return out;
}

std::string message_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& e) {
    return e.message();
  }
  ADD_FAILURE() << "no error";
  return {};
}

TEST(CliMessages, AWrongTensorNameListsTheClosestNames) {
  TempDir dir;
  const auto path = dir / "m.safetensors";
  write_file(path, safetensors_file(
                       {{"model.layers.0.mlp.up_proj.weight", "F32", {1}, f32_bytes({1})},
                        {"model.layers.1.mlp.up_proj.weight", "F32", {1}, f32_bytes({2})},
                        {"model.layers.0.mlp.down_proj.weight", "F32", {1}, f32_bytes({3})},
                        {"model.layers.0.self_attn.q_proj.weight", "F32", {1}, f32_bytes({4})},
                        {"lm_head.weight", "F32", {1}, f32_bytes({5})}}));
  auto loader = make_weight_loader();
  auto load = [&](const std::string& name) {
    return message_of(
        [&] { loader->load_tensor({.name = name, .source = WeightSource::file(path)}); });
  };
  // Nearest first, at most three.
  EXPECT_EQ(load("model.layers.0.mlp.up_proj.weigth"),
            "no such tensor; closest: 'model.layers.0.mlp.up_proj.weight', "
            "'model.layers.1.mlp.up_proj.weight', 'model.layers.0.mlp.down_proj.weight'");
  EXPECT_EQ(load("lm_head.weights"), "no such tensor; closest: 'lm_head.weight'");
  // Nothing near: no list.
  EXPECT_EQ(load("embed_tokens"), "no such tensor");
  // A source restricted to one tensor that it lacks says the same.
  EXPECT_EQ(message_of([&] { loader->get_metadata(WeightSource::file(path, "lm_head.weigh")); }),
            "no such tensor; closest: 'lm_head.weight'");
  // The CLI: an exact --tensor name that is absent gets the library's message.
  const auto r =
      run_command(cli_path() + " hash --tensor lm_head.weigth " + shell_quote(path.string()));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no such tensor; closest: 'lm_head.weight'"), std::string::npos) << r.err;
  // A glob that matches nothing: no suggestions to make.
  const auto glob =
      run_command(cli_path() + " hash --tensor 'nothing.*' " + shell_quote(path.string()));
  EXPECT_EQ(glob.exit_code, 1);
  EXPECT_NE(glob.err.find("no tensor matches nothing.*"), std::string::npos) << glob.err;
}

// A checkpoint of many names, one of them very long: the search stays bounded and still finds.
TEST(CliMessages, ClosestNamesOnAHugeCheckpoint) {
  std::vector<StTensor> tensors;
  for (int i = 0; i < 20000; ++i)
    tensors.push_back({"model.layers." + std::to_string(i) + ".w", "U8", {1}, std::string(1, 'x')});
  tensors.push_back({std::string(5000, 'n'), "U8", {1}, std::string(1, 'x')});
  TempDir dir;
  write_file(dir / "m.safetensors", safetensors_file(tensors));
  const std::string message = message_of([&] {
    make_weight_loader()->load_tensor(
        {.name = "model.layers.12345.W", .source = WeightSource::file(dir / "m.safetensors")});
  });
  EXPECT_TRUE(message.starts_with("no such tensor; closest: 'model.layers.12345.w'")) << message;
}

class CliTruncated : public testing::Test {
 protected:
  // The error `ballast inspect` prints for `bytes` written as `name`.
  std::string inspect(const std::string& name, const std::string& bytes,
                      const std::string& options = "") {
    write_file(dir_ / name, bytes);
    const auto r =
        run_command(cli_path() + " inspect " + options + " " + shell_quote((dir_ / name).string()));
    EXPECT_EQ(r.exit_code, 1) << r.out;
    return r.err;
  }
  TempDir dir_;
};

TEST_F(CliTruncated, Safetensors) {
  EXPECT_EQ(inspect("header.safetensors", u64_le(100) + "{}"),
            "ballast: error: invalid_format: truncated: expected 108 bytes, file has 10 (the "
            "header) (source: " +
                (dir_ / "header.safetensors").string() + ", offset: 0)\n");
  std::string full = safetensors_file({{"w", "F32", {4}, f32_bytes({1, 2, 3, 4})}});
  const std::string err = inspect("data.safetensors", full.substr(0, full.size() - 4));
  EXPECT_NE(err.find(fmt::format("truncated: expected {} bytes, file has {} (source: ", full.size(),
                                 full.size() - 4)),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("tensor: 'w'"), std::string::npos) << err;
}

TEST_F(CliTruncated, Numpy) {
  const std::string npy =
      std::string("\x93NUMPY\x01\x00", 8) + std::string("\xe8\x03", 2) + "{'descr'";
  EXPECT_NE(inspect("a.npy", npy).find("truncated: expected 1010 bytes, file has 18 (the header)"),
            std::string::npos);
}

TEST_F(CliTruncated, Gguf) {
  const std::string gguf = std::string("GGUF\x03\x00\x00\x00\x00\x00", 10);
  EXPECT_NE(inspect("a.gguf", gguf).find("truncated: expected 16 bytes, file has 10"),
            std::string::npos);
}

TEST_F(CliTruncated, PytorchLegacy) {
  BALLAST_REQUIRE_PYTHON("torch");
  const auto full = dir_ / "full.pt";
  run_python(R"PY(
import sys, torch
torch.save({"w": torch.arange(6, dtype=torch.float32)}, sys.argv[1],
           _use_new_zipfile_serialization=False)
)PY",
             {full.string()});
  const std::string bytes = read_file(full);
  const std::string err = inspect("cut.pt", bytes.substr(0, bytes.size() - 8));
  EXPECT_NE(err.find(fmt::format("truncated: expected {} bytes, file has {} (storage '",
                                 bytes.size(), bytes.size() - 8)),
            std::string::npos)
      << err;
}

TEST_F(CliTruncated, Onnx) {
  // ir_version 8, then the graph (field 7) claiming 1000 bytes of which 3 are there.
  const std::string onnx = std::string("\x08\x08\x3a\xe8\x07\x0a\x01x", 8);
  EXPECT_NE(inspect("a.onnx", onnx, "--format onnx")
                .find("truncated: expected 1005 bytes, file has 8 (field 7)"),
            std::string::npos);
}

TEST_F(CliTruncated, Raw) {
  EXPECT_NE(inspect("a.bin", std::string(12, '\0'), "--format raw --dtype f32 --shape 4")
                .find("truncated: expected 16 bytes, file has 12 (f32 [4] at offset 0: 4 bytes "
                      "missing)"),
            std::string::npos);
  EXPECT_NE(
      inspect("b.bin", std::string(12, '\0'), "--format raw --dtype f32 --shape 4 --offset 20")
          .find("truncated: expected 36 bytes, file has 12"),
      std::string::npos);
}

}  // namespace
}  // namespace ballast::test
