// The CLI side of transformations on load: `hash` and `load` print and count every part of a
// quantized bundle, and `convert` writes safetensors files that ballast and an independent
// hand-written Python parser read back with the same hashes. Composed steps (slice ->
// transpose -> cast -> quantize) on golden safetensors, npy and GGUF files are checked
// against torch applying the same steps to the f32 values.
#include <gtest/gtest.h>

#include "ballast/ballast.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

// Reads a safetensors file by hand (header length, JSON, 8-byte alignment, ranges tiling the
// data) and prints {"metadata": ..., "tensors": {name: {dtype, shape, sha256}}}.
constexpr const char* kReadSafetensors = R"PY(
import sys, json, struct, hashlib
data = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", data[:8])[0]
assert (8 + n) % 8 == 0, "data must start 8-byte aligned"
header = json.loads(data[8:8 + n])
body = data[8 + n:]
meta = header.pop("__metadata__", {})
spans = sorted(tuple(v["data_offsets"]) for v in header.values())
pos = 0
for b, e in spans:
    assert b == pos, "ranges must tile the data"
    pos = e
assert pos == len(body), "no trailing bytes"
out = {n: {"dtype": v["dtype"], "shape": v["shape"],
           "sha256": hashlib.sha256(body[v["data_offsets"][0]:v["data_offsets"][1]]).hexdigest()}
       for n, v in header.items()}
print(json.dumps({"metadata": meta, "tensors": out}))
)PY";

// argv: f32 safetensors written by `convert --dtype f32`, then tensor:steps pairs; applies
// the steps with torch and prints {tensor: {part: sha256}}.
constexpr const char* kComposeReference = R"PY(
import sys, json, struct, hashlib, numpy as np, torch
data = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n]); body = data[8 + n:]
def tensor(name):
    v = header[name]; b, e = v["data_offsets"]
    return torch.from_numpy(np.frombuffer(body[b:e], dtype=np.float32).reshape(v["shape"]).copy())
def asym(x, maxq):
    xmin = torch.clamp(x.amin(dim=-1), max=0); xmax = torch.clamp(x.amax(dim=-1), min=0)
    both = (xmin == 0) & (xmax == 0)
    xmin = torch.where(both, -torch.ones_like(xmin), xmin); xmax = torch.where(both, torch.ones_like(xmax), xmax)
    s = (xmax - xmin) / maxq
    return s, torch.round(-xmin / s)
def affine(x, s, z, maxq): return torch.clamp(torch.round(x / s) + z, 0, maxq)
def quantize(t, scheme, arg):
    if scheme == "int8" and arg == "sym":
        amax = t.abs().amax(dim=1); s = torch.where(amax > 0, amax / 127, torch.ones_like(amax))
        return {"qweight": torch.clamp(torch.round(t / s[:, None]), -127, 127).to(torch.int8), "scales": s}
    if scheme == "int8":
        s, z = asym(t, 255)
        return {"qweight": affine(t, s[:, None], z[:, None], 255).to(torch.uint8), "scales": s, "qzeros": z.to(torch.uint8)}
    g = int(arg); o, i = t.shape
    tg = t.reshape(o, i // g, g); s, z = asym(tg, 15)
    q = affine(tg, s[..., None], z[..., None], 15).reshape(o, i).to(torch.uint8).numpy()
    return {"qweight": torch.from_numpy((q[:, 0::2] | (q[:, 1::2] << 4)).astype(np.uint8)), "scales": s, "zeros": z.to(torch.uint8)}
out = {}
for spec in sys.argv[2:]:
    name, steps = spec.split("=", 1)
    t = tensor(name)
    for step in steps.split(","):
        f = step.split(":")
        if f[0] == "slice":
            d, a, b = int(f[1]), int(f[2]), int(f[3]); t = t.narrow(d, a, b - a)
        elif f[0] == "reshape": t = t.reshape([int(x) for x in f[1:]])
        elif f[0] == "transpose": t = t.transpose(int(f[1]), int(f[2]))
        elif f[0] == "cast": t = t.to({"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[f[1]]).float()
        elif f[0] == "quantize":
            parts = quantize(t.contiguous(), f[1], f[2])
            out[name] = {p: hashlib.sha256(v.contiguous().numpy().tobytes()).hexdigest() for p, v in parts.items()}
print(json.dumps(out))
)PY";

class QuantizeCli : public testing::Test {
 protected:
  CommandResult ballast(const std::string& args) { return run_command(cli_path() + " " + args); }
  nlohmann::json hash_json(const std::string& source, const std::string& args) {
    auto r = ballast("hash --json " + shell_quote(source) + " " + args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out)["tensors"];
  }
  static std::string golden(const std::string& path) { return (*golden_dir() / path).string(); }
  TempDir dir_;
};

TEST_F(QuantizeCli, HashAndLoadReportEveryPart) {
  BALLAST_REQUIRE_GOLDEN();
  auto parts =
      hash_json(golden("gguf/all_types.gguf"),
                "--tensor bf16_4x256 --transform reshape:8:128,quantize:gptq:4:64:desc_act");
  ASSERT_EQ(parts.size(), 4u) << parts.dump();
  EXPECT_EQ(parts["bf16_4x256.qweight"]["shape"], (nlohmann::json{16, 8}));
  EXPECT_EQ(parts["bf16_4x256.qweight"]["dtype"], "i32");
  EXPECT_EQ(parts["bf16_4x256.scales"]["dtype"], "f16");
  EXPECT_TRUE(parts.contains("bf16_4x256.qzeros"));
  EXPECT_TRUE(parts.contains("bf16_4x256.g_idx"));
  auto load = ballast("load --json --mode read " + shell_quote(golden("gguf/all_types.gguf")) +
                      " --tensor bf16_4x256 --transform quantize:int8");
  ASSERT_EQ(load.exit_code, 0) << load.err;
  EXPECT_EQ(nlohmann::json::parse(load.out)["bytes"], 4 * 256 + 4 * 4);
  auto bad = ballast("hash " + shell_quote(golden("gguf/all_types.gguf")) +
                     " --tensor f32_3d_2x3x4 --transform quantize:int8");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("quantize:int8:sym"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("f32_3d_2x3x4"), std::string::npos) << bad.err;
}

TEST_F(QuantizeCli, LoadTakesADtypeShortcut) {
  BALLAST_REQUIRE_GOLDEN();
  auto load = ballast("load --json " + shell_quote(golden("gguf/all_types.gguf")) +
                      " --tensor bf16_4x256 --dtype f32");
  ASSERT_EQ(load.exit_code, 0) << load.err;
  EXPECT_EQ(nlohmann::json::parse(load.out)["bytes"], 4 * 256 * 4);
}

// Converts golden files of several formats and reads each result back twice: with ballast
// and with a hand-written Python parser; both must agree with ballast's hash of the source.
TEST_F(QuantizeCli, ConvertWritesSafetensorsOthersRead) {
  BALLAST_REQUIRE_GOLDEN();
  struct Case {
    std::string source, args;
  };
  const std::vector<Case> cases = {
      {"safetensors/st_all_dtypes.safetensors", ""},
      {"numpy/fortran_f32_3x4.npy", "--transform transpose:0:1 --dtype f16"},
      {"numpy/arrays_savez.npz", "--tensor f32_3d --tensor be_f32_2d"},
      {"gguf/all_types.gguf", "--tensor q8_0_4x256 --tensor bf16_4x256 --dtype bf16"},
      {"gguf/all_types.gguf", "--tensor bf16_4x256 --transform reshape:8:128,quantize:awq:4:zp"},
  };
  int k = 0;
  for (const Case& c : cases) {
    const std::string out = (dir_ / ("out" + std::to_string(k++) + ".safetensors")).string();
    auto r =
        ballast("convert " + shell_quote(golden(c.source)) + " " + shell_quote(out) + " " + c.args);
    ASSERT_EQ(r.exit_code, 0) << c.source << ": " << r.err;
    // The source hashed with the same options (hash takes the same --transform / --dtype).
    std::string hash_args = c.args;
    auto want = hash_json(golden(c.source), hash_args);
    auto back = hash_json(out, "");
    EXPECT_EQ(back, want) << c.source;
    auto py = nlohmann::json::parse(run_python(kReadSafetensors, {out}));
    EXPECT_EQ(py["metadata"]["source"], golden(c.source));
    EXPECT_EQ(py["metadata"]["converted_by"], "ballast");
    ASSERT_EQ(py["tensors"].size(), want.size()) << c.source;
    for (const auto& [name, t] : want.items())
      EXPECT_EQ(py["tensors"][name]["sha256"], t["sha256"]) << c.source << " " << name;
  }
  // A failed convert leaves nothing behind, not even a partial file.
  const std::string failed = (dir_ / "failed.safetensors").string();
  auto r = ballast("convert " + shell_quote(golden("gguf/all_types.gguf")) + " " +
                   shell_quote(failed) + " --transform quantize:int8");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_FALSE(std::filesystem::exists(failed));
  size_t leftovers = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_.path()))
    leftovers += e.path().filename().string().starts_with(".");
  EXPECT_EQ(leftovers, 0u);
}

TEST_F(QuantizeCli, ComposedStepsMatchTorchOnSeveralFormats) {
  BALLAST_REQUIRE_GOLDEN();
  BALLAST_REQUIRE_PYTHON("torch");
  struct Case {
    std::string source, tensor, steps;
  };
  const std::vector<Case> cases = {
      {"safetensors/st_all_dtypes.safetensors", "f32_3d",
       "slice:0:1:2,reshape:3:4,transpose:0:1,cast:bf16,quantize:int8:asym"},
      {"numpy/fortran_f32_3x4.npy", "arr_0", "slice:0:0:2,transpose:0:1,cast:f16,quantize:int4:2"},
      {"gguf/all_types.gguf", "bf16_4x256",
       "slice:1:64:192,transpose:0:1,cast:f16,quantize:int8:sym"},
      {"gguf/all_types.gguf", "q4_1_4x256", "slice:0:1:3,cast:bf16,quantize:int4:2"},
  };
  for (const Case& c : cases) {
    const std::string dense = (dir_ / "dense.safetensors").string();
    auto r = ballast("convert " + shell_quote(golden(c.source)) + " " + shell_quote(dense) +
                     " --dtype f32 --tensor " + c.tensor);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto want =
        nlohmann::json::parse(run_python(kComposeReference, {dense, c.tensor + "=" + c.steps}));
    auto got = hash_json(golden(c.source), "--tensor " + c.tensor + " --transform " + c.steps);
    ASSERT_EQ(got.size(), want[c.tensor].size()) << c.steps;
    for (const auto& [part, sha] : want[c.tensor].items())
      EXPECT_EQ(got[c.tensor + "." + part]["sha256"], sha)
          << c.source << " " << c.steps << " " << part;
  }
}

}  // namespace
}  // namespace ballast::test
