// Tensor-parallel shards (the Shard step) checked against torch: torch.chunk of the full tensor
// for row, column, fused (qkv 8+4+4, gate_up 5+5, fused along dim 1), uneven and empty chunks
// and stacked MoE experts, on safetensors, PyTorch .bin, ONNX and GGUF files, mapped and in
// read mode, and composed with cast (bf16 -> f32, GGUF q8_0 dequantized); a block-quantized
// row split along its columns is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ballast/ballast.hpp"
#include "support/safetensors_writer.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

using nlohmann::json;

// The fixtures (torch.save, onnx's numpy_helper, raw bytes for the safetensors writer) and
// the expected shard of every (case, world, rank): torch.chunk of each part, concatenated.
constexpr const char* kReference = R"PY(
import sys, json, hashlib, torch, onnx
from onnx import helper, numpy_helper
out = sys.argv[1]
g = torch.Generator().manual_seed(29)
T = {
    "row": torch.randn(10, 6, generator=g),
    "col": torch.randn(6, 10, generator=g),
    "qkv": torch.randn(16, 6, generator=g),
    "gate_up": torch.randn(10, 6, generator=g),
    "qkv_t": torch.randn(3, 16, generator=g),
    "tiny": torch.randn(2, 3, generator=g),
    "experts": torch.randn(5, 4, 3, generator=g),
    "half": torch.randn(7, 5, generator=g).to(torch.bfloat16),
    "ints": torch.arange(7 * 9, dtype=torch.int32).reshape(7, 9),
}
torch.save(T, out + "/model.bin")
inits = [numpy_helper.from_array(t.numpy(), name) for name, t in T.items() if name != "half"]
graph = helper.make_graph([], "g", [], [], initializer=inits)
onnx.save(helper.make_model(graph), out + "/model.onnx")
tensors = []
for name, t in T.items():
    raw = t.view(torch.int16) if t.dtype == torch.bfloat16 else t
    open(out + "/" + name + ".raw", "wb").write(raw.contiguous().numpy().tobytes())
    tensors.append({"name": name, "dtype": {torch.float32: "F32", torch.bfloat16: "BF16",
                    torch.int32: "I32"}[t.dtype], "shape": list(t.shape)})

def shard(t, rank, world, dim, parts):
    pieces = []
    for p in (t.split(parts, dim) if parts else [t]):
        chunks = torch.chunk(p, world, dim)
        pieces.append(chunks[rank] if rank < len(chunks) else p.narrow(dim, p.shape[dim], 0))
    return torch.cat(pieces, dim).contiguous()

def digest(t):
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    return hashlib.sha256(t.numpy().tobytes()).hexdigest()

CASES = [("row", 0, None, ""), ("col", 1, None, ""), ("col", -1, None, ""),
         ("qkv", 0, [8, 4, 4], ""), ("gate_up", 0, [5, 5], ""), ("qkv_t", 1, [8, 4, 4], ""),
         ("tiny", 0, None, ""), ("experts", 0, None, ""), ("experts", 2, None, ""),
         ("half", 1, None, ""), ("half", 0, None, ",cast:f32"), ("ints", 1, [3, 6], "")]
expected = []
for name, dim, parts, extra in CASES:
    for world in (1, 2, 3, 4):
        for rank in range(world):
            r = shard(T[name], rank, world, dim, parts)
            if extra == ",cast:f32":
                r = r.float()
            step = f"shard:{rank}/{world}:{dim}" + (":" + "+".join(map(str, parts)) if parts else "")
            expected.append({"tensor": name, "steps": step + extra, "shape": list(r.shape),
                             "sha256": digest(r)})
json.dump({"tensors": tensors, "expected": expected}, open(out + "/cases.json", "w"))
)PY";

// Expected shards of raw f32 tensors: {"file", "shape", "dim"} -> sha256 per world and rank.
constexpr const char* kChunkRaw = R"PY(
import sys, json, hashlib, numpy as np, torch
jobs = json.load(open(sys.argv[1]))
result = []
for job in jobs:
    t = torch.from_numpy(np.fromfile(job["file"], dtype=np.float32).reshape(job["shape"]))
    for world in (1, 2, 3, 4):
        for rank in range(world):
            chunks = torch.chunk(t, world, job["dim"])
            r = chunks[rank] if rank < len(chunks) else t.narrow(job["dim"], t.shape[job["dim"]], 0)
            result.append({"step": f"shard:{rank}/{world}:{job['dim']}", "shape": list(r.shape),
                           "sha256": hashlib.sha256(r.contiguous().numpy().tobytes()).hexdigest()})
print(json.dumps(result))
)PY";

class TensorParallelReference : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    BALLAST_REQUIRE_PYTHON("onnx");
    dir_ = new TempDir();
    run_python(kReference, {dir_->path().string()});
    cases_ = json::parse(read_file(*dir_ / "cases.json"));
    std::vector<StTensor> tensors;
    for (const auto& t : cases_["tensors"])
      tensors.push_back({t["name"], t["dtype"], t["shape"].get<std::vector<int64_t>>(),
                         read_file(*dir_ / (t["name"].get<std::string>() + ".raw"))});
    write_file(*dir_ / "model.safetensors", safetensors_file(tensors));
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }

  void expect_cases(const std::string& file, ReadMode mode) {
    WeightLoaderConfig config;
    config.read_mode = mode;
    auto loader = make_weight_loader(config);
    const auto source = WeightSource::file(*dir_ / file);
    const auto meta = loader->get_metadata(source);
    size_t checked = 0;
    for (const auto& c : cases_["expected"]) {
      const std::string tensor = c["tensor"], steps = c["steps"];
      if (!meta.tensors.contains(tensor)) continue;  // ONNX has no bf16 fixture
      SCOPED_TRACE(file + " " + tensor + " " + steps);
      auto t = loader->load_tensor(TensorSpec{
          .name = tensor, .source = source, .transformations = parse_transformations(steps)});
      EXPECT_EQ(t->shape(), c["shape"].get<Shape>());
      EXPECT_EQ(sha256_hex(*t), c["sha256"].get<std::string>());
      ++checked;
    }
    EXPECT_GE(checked, 100u);  // 120 cases, 100 without the bf16 ones (ONNX)
  }

  static TempDir* dir_;
  static json cases_;
};

TempDir* TensorParallelReference::dir_ = nullptr;
json TensorParallelReference::cases_;

TEST_F(TensorParallelReference, SafetensorsMatchesTorchChunk) {
  expect_cases("model.safetensors", ReadMode::automatic);
  expect_cases("model.safetensors", ReadMode::read);
}

TEST_F(TensorParallelReference, PytorchBinMatchesTorchChunk) {
  expect_cases("model.bin", ReadMode::automatic);
  expect_cases("model.bin", ReadMode::read);
}

TEST_F(TensorParallelReference, OnnxMatchesTorchChunk) {
  expect_cases("model.onnx", ReadMode::automatic);
  expect_cases("model.onnx", ReadMode::read);
}

// A row shard then quantize:int8 (per-row scales) is the rank's rows of the whole tensor's
// quantization: torch.chunk(10 rows, 3) gives rank 1 rows 4..7.
TEST_F(TensorParallelReference, RowShardComposesWithQuantize) {
  auto loader = make_weight_loader();
  const auto source = WeightSource::file(*dir_ / "model.safetensors");
  auto load = [&](const std::string& steps) {
    return loader->load_tensor(TensorSpec{
        .name = "row", .source = source, .transformations = parse_transformations(steps)});
  };
  auto whole = load("quantize:int8");
  auto shard = load("shard:1/3:0,quantize:int8");
  ASSERT_EQ(shard->shape(), (Shape{4, 6}));
  EXPECT_TRUE(
      std::equal(shard->bytes().begin(), shard->bytes().end(), whole->bytes().begin() + 4 * 6));
  const auto& whole_scales = whole->parts().at("scales");
  const auto& shard_scales = shard->parts().at("scales");
  EXPECT_TRUE(std::equal(shard_scales->bytes().begin(), shard_scales->bytes().end(),
                         whole_scales->bytes().begin() + 4 * 4));
}

// GGUF (the golden gguf-py file): f32 along each dim, bf16 columns and q8_0 / q4_0 rows
// dequantized, against torch.chunk of the whole tensor as ballast loads it (which the golden
// tests check against gguf-py).
TEST(TensorParallelGguf, MatchesTorchChunkOfTheWholeTensor) {
  BALLAST_REQUIRE_GOLDEN();
  BALLAST_REQUIRE_PYTHON("torch");
  TempDir dir;
  const auto source = WeightSource::file(*golden_dir() / "gguf/all_types.gguf");
  struct Case {
    std::string tensor;
    int dim;
    std::string cast;  // applied to the whole tensor and after the shard
  };
  const std::vector<Case> cases = {{"f32_3d_2x3x4", 0, ""},       {"f32_3d_2x3x4", 1, ""},
                                   {"f32_3d_2x3x4", 2, ""},       {"bf16_4x256", 1, "cast:f32"},
                                   {"q8_0_4x256", 0, "cast:f32"}, {"q4_0_4x256", 0, "cast:f32"}};
  auto loader = make_weight_loader();
  json jobs = json::array();
  for (size_t i = 0; i < cases.size(); ++i) {
    auto whole =
        loader->load_tensor(TensorSpec{.name = cases[i].tensor,
                                       .source = source,
                                       .transformations = parse_transformations(cases[i].cast)});
    const auto path = dir / fmt::format("{}.raw", i);
    write_file(path,
               std::string(reinterpret_cast<const char*>(whole->bytes().data()), whole->nbytes()));
    jobs.push_back({{"file", path.string()}, {"shape", whole->shape()}, {"dim", cases[i].dim}});
  }
  write_file(dir / "jobs.json", jobs.dump());
  const json expected = json::parse(run_python(kChunkRaw, {(dir / "jobs.json").string()}));
  ASSERT_EQ(expected.size(), cases.size() * 10);
  for (size_t i = 0; i < expected.size(); ++i) {
    const Case& c = cases[i / 10];
    const std::string steps =
        expected[i]["step"].get<std::string>() + (c.cast.empty() ? "" : "," + c.cast);
    SCOPED_TRACE(c.tensor + " " + steps);
    auto t = loader->load_tensor(TensorSpec{
        .name = c.tensor, .source = source, .transformations = parse_transformations(steps)});
    EXPECT_EQ(t->shape(), expected[i]["shape"].get<Shape>());
    EXPECT_EQ(sha256_hex(*t), expected[i]["sha256"].get<std::string>());
  }
}

TEST(TensorParallelGguf, BlockQuantizedRowsSplitAndColumnsAreRefused) {
  BALLAST_REQUIRE_GOLDEN();
  auto loader = make_weight_loader();
  const auto source = WeightSource::file(*golden_dir() / "gguf/all_types.gguf");
  auto load = [&](const std::string& steps) {
    return loader->load_tensor(TensorSpec{
        .name = "q4_0_4x256", .source = source, .transformations = parse_transformations(steps)});
  };
  for (const char* steps : {"shard:0/2:1", "shard:1/2:1,cast:f32"}) {
    SCOPED_TRACE(steps);
    try {
      (void)load(steps);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::unsupported);
      EXPECT_NE(e.message().find("whole rows of dimension 0"), std::string::npos) << e.message();
    }
  }
  // Fused whole rows of blocks split: rank 0 of 2 of parts 2+2 is rows 0 and 2.
  auto whole = load("cast:f32");
  auto fused = load("shard:0/2:0:2+2,cast:f32");
  ASSERT_EQ(fused->shape(), (Shape{2, 256}));
  const auto* all = whole->bytes().data();
  const auto* got = fused->bytes().data();
  EXPECT_EQ(std::memcmp(got, all, 1024), 0);
  EXPECT_EQ(std::memcmp(got + 1024, all + 2048, 1024), 0);
}

}  // namespace
}  // namespace ballast::test
