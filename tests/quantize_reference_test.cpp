// Quantize steps and dequantization checked against independent Python references run with
// Debian's /usr/bin/python3: int8 / int4 formulas computed with torch, GPTQ packing written as
// AutoGPTQ's pack loops and AWQ packing as AutoAWQ's interleaved order in numpy, FP8 rounding
// by a nearest-code search over the spec's code table. Checkpoints packed by the reference
// (GPTQ with a shuffled act-order g_idx, AWQ, FP8 with DeepSeek-style block scales) are
// dequantized by ballast and compared with the reference's own dequantization.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "ballast/ballast.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

constexpr const char* kReference = R"PY(
import sys, json, struct, numpy as np, torch
out = sys.argv[1]
rng = np.random.default_rng(11)
O, I = 64, 256
w = rng.standard_normal((O, I)).astype(np.float32)
w[3] = 0.0                      # an all-zero row
w[5] = np.abs(w[5])             # a row without negative values
w[7, :32] = 0.0                 # an all-zero group
w.tofile(out + "/w.bin")
t = torch.from_numpy(w)

def save(name, a): np.ascontiguousarray(a).tofile(out + "/" + name + ".bin")

# int8 symmetric, per row
amax = t.abs().amax(dim=1)
scale = torch.where(amax > 0, amax / 127, torch.ones_like(amax))
save("int8_sym_q", torch.clamp(torch.round(t / scale[:, None]), -127, 127).to(torch.int8).numpy())
save("int8_sym_s", scale.numpy())

def asym(x, maxq):            # AutoGPTQ Quantizer.find_params, asymmetric, over the last dim
    xmin = torch.clamp(x.amin(dim=-1), max=0); xmax = torch.clamp(x.amax(dim=-1), min=0)
    both = (xmin == 0) & (xmax == 0)
    xmin = torch.where(both, -torch.ones_like(xmin), xmin); xmax = torch.where(both, torch.ones_like(xmax), xmax)
    s = (xmax - xmin) / maxq
    return s, torch.round(-xmin / s)

def affine(x, s, z, maxq): return torch.clamp(torch.round(x / s) + z, 0, maxq)

s, z = asym(t, 255)
save("int8_asym_q", affine(t, s[:, None], z[:, None], 255).to(torch.uint8).numpy())
save("int8_asym_s", s.numpy()); save("int8_asym_z", z.to(torch.uint8).numpy())

G = 32
tg = t.reshape(O, I // G, G)
s, z = asym(tg, 15)
q = affine(tg, s[..., None], z[..., None], 15).reshape(O, I).to(torch.uint8).numpy()
save("int4_q", (q[:, 0::2] | (q[:, 1::2] << 4)).astype(np.uint8))
save("int4_s", s.numpy()); save("int4_z", z.to(torch.uint8).numpy())

def gptq_params(group, bits):   # per (row, group); zero from the f32 scale, q from the f16 scale
    maxq = 2 ** bits - 1
    tg = t.reshape(O, I // group, group)
    s, z = asym(tg, maxq)
    sh = s.half().float()
    q = torch.where(sh[..., None] == 0, z[..., None].expand_as(tg), affine(tg, sh[..., None], z[..., None], maxq))
    return q.reshape(O, I).to(torch.int64).numpy(), sh, z

def pack3(src, dst, put):    # AutoGPTQ's 3-bit loop: 32 values in 3 words, two straddle words
    i = w = 0
    while w < dst:
        for j in range(i, i + 10): put(w, src(j) << (3 * (j - i)))
        i += 10; put(w, src(i) << 30); w += 1
        put(w, (src(i) >> 2) & 1); i += 1
        for j in range(i, i + 10): put(w, src(j) << (3 * (j - i) + 1))
        i += 10; put(w, src(i) << 31); w += 1
        put(w, (src(i) >> 1) & 0x3); i += 1
        for j in range(i, i + 10): put(w, src(j) << (3 * (j - i) + 2))
        i += 10; w += 1

def gptq_pack(bits, group, g_idx=None):   # AutoGPTQ QuantLinear.pack, transposed layout
    q, sh, z = gptq_params(group, bits)
    intweight = q.T.astype(np.uint32)                  # [in, out]
    pw = 32 // bits
    qweight = np.zeros((I * bits // 32, O), dtype=np.uint32)
    zeros = ((z.T.numpy().astype(np.int64) - 1) & (2 ** bits - 1)).astype(np.uint32)   # v1: zero - 1
    qzeros = np.zeros((I // group, O * bits // 32), dtype=np.uint32)
    if bits == 3:
        def put_w(row, v): qweight[row] |= v
        def put_z(col, v): qzeros[:, col] |= v
        pack3(lambda j: intweight[j], qweight.shape[0], put_w)
        pack3(lambda j: zeros[:, j], qzeros.shape[1], put_z)
        return qweight, qzeros, sh.T.contiguous().half().numpy()
    i = row = 0
    while row < qweight.shape[0]:
        for j in range(i, i + pw): qweight[row] |= intweight[j] << (bits * (j - i))
        i += pw; row += 1
    i = col = 0
    while col < qzeros.shape[1]:
        for j in range(i, i + pw): qzeros[:, col] |= zeros[:, j] << (bits * (j - i))
        i += pw; col += 1
    return qweight, qzeros, sh.T.contiguous().half().numpy()

for bits in (2, 3, 4, 8):
    qw, qz, sc = gptq_pack(bits, 64)
    save(f"gptq{bits}_qweight", qw); save(f"gptq{bits}_qzeros", qz); save(f"gptq{bits}_scales", sc)

# The dense values (q - zero) * scale of the 3-bit checkpoint written below.
q3, sh3, z3 = gptq_params(64, 3)
gi = np.arange(I) // 64
dense3 = (q3.astype(np.float32) - z3.numpy()[:, gi]) * sh3.numpy()[:, gi]
save("gptq3_dense", dense3.astype(np.float32))

AWQ_ORDER = [0, 2, 4, 6, 1, 3, 5, 7]
def awq_pack(group, zero_point):          # AutoAWQ pseudo_quantize_tensor + WQLinear_GEMM pack
    tg = t.reshape(O, I // group, group)
    if zero_point:
        mx, mn = tg.amax(dim=-1), tg.amin(dim=-1)
        s = (mx - mn).clamp(min=1e-5) / 15
        z = (-torch.round(mn / s)).clamp(0, 15)
    else:
        s = tg.abs().amax(dim=-1).clamp(min=1e-5) / 7
        z = torch.full_like(s, 8.0)
    sh = s.half().float()
    q = affine(tg, sh[..., None], z[..., None], 15).reshape(O, I).to(torch.int64).numpy()
    intweight = q.T.astype(np.uint32)                  # [in, out]
    qweight = np.zeros((I, O // 8), dtype=np.uint32)
    for col in range(O // 8):
        for i in range(8): qweight[:, col] |= intweight[:, col * 8 + AWQ_ORDER[i]] << (i * 4)
    zt = z.T.numpy().astype(np.uint32)                 # [groups, out]
    qzeros = np.zeros((I // group, O // 8), dtype=np.uint32)
    for col in range(O // 8):
        for i in range(8): qzeros[:, col] |= zt[:, col * 8 + AWQ_ORDER[i]] << (i * 4)
    return qweight, qzeros, sh.T.contiguous().half().numpy()

for zp in (True, False):
    qw, qz, sc = awq_pack(64, zp)
    tag = "zp" if zp else "sym"
    save(f"awq_{tag}_qweight", qw); save(f"awq_{tag}_qzeros", qz); save(f"awq_{tag}_scales", sc)

def fp8_table(e, m, bias, ieee):          # every code's value from the OCP spec's bit fields
    vals = []
    for c in range(256):
        s, ex, mant = c >> 7, (c >> m) & ((1 << e) - 1), c & ((1 << m) - 1)
        if ieee and ex == (1 << e) - 1: v = np.inf if mant == 0 else np.nan
        elif not ieee and ex == (1 << e) - 1 and mant == (1 << m) - 1: v = np.nan
        elif ex == 0: v = mant * 2.0 ** (1 - bias - m)
        else: v = (1 + mant / 2 ** m) * 2.0 ** (ex - bias)
        vals.append(-v if s else v)
    return np.array(vals)

def fp8_encode(x, table, fmax):           # nearest finite code, ties to the even code
    finite = [c for c in range(128) if np.isfinite(table[c])]
    mags = np.array([table[c] for c in finite])
    res = np.zeros(x.shape, dtype=np.uint8)
    for k, v in np.ndenumerate(x):
        a = min(abs(float(v)), fmax)
        d = np.abs(mags - a); best = np.flatnonzero(d == d.min())
        c = finite[best[0]] if len(best) == 1 else [finite[b] for b in best if finite[b] % 2 == 0][0]
        res[k] = c | (0x80 if np.signbit(v) else 0)
    return res

for name, e, m, bias, ieee, fmax in (("e4m3", 4, 3, 7, False, 448.0), ("e5m2", 5, 2, 15, True, 57344.0)):
    table = fp8_table(e, m, bias, ieee)
    a = float(np.abs(w).max()); sc = np.float32(a) / np.float32(fmax)
    save(f"fp8_{name}_q", fp8_encode((w / sc).astype(np.float32), table, fmax))
    save(f"fp8_{name}_s", np.array([sc], dtype=np.float32))

def safetensors(path, tensors):           # hand-written safetensors: header JSON + data
    header, blobs, off = {}, [], 0
    for name, (dt, a) in tensors.items():
        b = np.ascontiguousarray(a).tobytes()
        header[name] = {"dtype": dt, "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b); off += len(b)
    h = json.dumps(header).encode(); h += b" " * (-len(h) % 8)
    with open(path, "wb") as f: f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))

# A GPTQ act-order checkpoint: g_idx assigns input elements to groups in a shuffled order.
bits, group = 4, 64
perm = rng.permutation(I)
g_idx = (perm // group).astype(np.int32)        # element i belongs to group g_idx[i]
maxq = 15
wq = np.zeros((O, I), dtype=np.int64); scales = np.zeros((I // group, O), dtype=np.float16)
zeros = np.zeros((I // group, O), dtype=np.int64)
for g in range(I // group):
    cols = np.flatnonzero(g_idx == g)
    s, z = asym(t[:, cols], maxq); sh = s.half().float()
    wq[:, cols] = affine(t[:, cols], sh[:, None], z[:, None], maxq).to(torch.int64).numpy()
    scales[g] = sh.half().numpy(); zeros[g] = z.numpy().astype(np.int64)
qweight = np.zeros((I // 8, O), dtype=np.uint32)
for i in range(I): qweight[i // 8] |= wq[:, i].astype(np.uint32) << (4 * (i % 8))
qzeros = np.zeros((I // group, O // 8), dtype=np.uint32)
zm1 = ((zeros - 1) & maxq).astype(np.uint32)
for o in range(O): qzeros[:, o // 8] |= zm1[:, o] << (4 * (o % 8))
# AutoGPTQ's dequantization (v1 zeros: add one back), in f32.
wf = qweight[:, None, :] >> (4 * np.arange(8, dtype=np.uint32))[None, :, None] & 15
wf = wf.reshape(I, O).astype(np.float32)
zf = (qzeros[:, :, None] >> (4 * np.arange(8, dtype=np.uint32))[None, None, :] & 15).reshape(I // group, O)
zf = ((zf + 1) & 15).astype(np.float32)
dense = (wf - zf[g_idx]) * scales[g_idx].astype(np.float32)
safetensors(out + "/gptq.safetensors", {
    "layer.qweight": ("I32", qweight.view(np.int32)), "layer.qzeros": ("I32", qzeros.view(np.int32)),
    "layer.scales": ("F16", scales), "layer.g_idx": ("I32", g_idx)})
save("gptq_dense", dense.T.astype(np.float32))
qw, qz, sc = gptq_pack(3, 64)
safetensors(out + "/gptq3.safetensors", {
    "layer.qweight": ("I32", qw.view(np.int32)), "layer.qzeros": ("I32", qz.view(np.int32)),
    "layer.scales": ("F16", sc)})

qw, qz, sc = awq_pack(64, True)
nib = np.array([AWQ_ORDER.index(k) for k in range(8)], dtype=np.uint32)   # AutoAWQ's reverse order
wf = (qw[:, :, None] >> (4 * nib)[None, None, :] & 15).reshape(I, O).astype(np.float32)
zf = (qz[:, :, None] >> (4 * nib)[None, None, :] & 15).reshape(I // 64, O).astype(np.float32)
gi = np.arange(I) // 64
dense = (wf - zf[gi]) * sc.astype(np.float32)[gi]
safetensors(out + "/awq.safetensors", {
    "layer.qweight": ("I32", qw.view(np.int32)), "layer.qzeros": ("I32", qz.view(np.int32)),
    "layer.scales": ("F16", sc)})
save("awq_dense", dense.T.astype(np.float32))

# FP8 with DeepSeek-style 128 x 128 block scales (weight_scale_inv multiplies).
table = fp8_table(4, 3, 7, False)
Ob, Ib = 200, 300
wb = rng.standard_normal((Ob, Ib)).astype(np.float32)
sinv = rng.uniform(0.5, 2.0, size=(2, 3)).astype(np.float32)
codes = fp8_encode(wb, table, 448.0)
dense = table[codes].astype(np.float32) * np.repeat(np.repeat(sinv, 128, 0), 128, 1)[:Ob, :Ib]
safetensors(out + "/fp8.safetensors", {"layer.weight": ("F8_E4M3", codes), "layer.weight_scale_inv": ("F32", sinv)})
save("fp8_dense", dense)
)PY";

class QuantizeReference : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!python_has("torch")) return;
    dir_ = new TempDir();
    run_python(kReference, {dir_->path().string()});
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override { BALLAST_REQUIRE_PYTHON("torch"); }

  TensorRef quantize(const std::string& steps) {
    WeightSource source = WeightSource::file(dir_->path() / "w.bin");
    source.format = WeightFormat::raw();
    source.raw_layout = RawLayout{DType::f32, {64, 256}, 0};
    return loader_->load_tensor(TensorSpec{
        .name = "data", .source = source, .transformations = parse_transformations(steps)});
  }
  static std::string file_digest(const std::string& name) {
    std::string bytes = read_file(dir_->path() / (name + ".bin"));
    return sha256_hex(std::as_bytes(std::span(bytes.data(), bytes.size())));
  }
  static std::string part(const Tensor& bundle, const std::string& name) {
    return sha256_hex(*bundle.parts().at(name));
  }
  static std::vector<float> floats(const std::string& name) {
    std::string bytes = read_file(dir_->path() / (name + ".bin"));
    std::vector<float> v(bytes.size() / 4);
    std::memcpy(v.data(), bytes.data(), bytes.size());
    return v;
  }

  static TempDir* dir_;
  std::unique_ptr<WeightLoader> loader_ = make_weight_loader();
};

TempDir* QuantizeReference::dir_ = nullptr;

TEST_F(QuantizeReference, Int8MatchesTorch) {
  auto sym = quantize("quantize:int8:sym");
  EXPECT_EQ(sym->dtype(), DType::i8);
  EXPECT_EQ(sym->shape(), (Shape{64, 256}));
  EXPECT_EQ(sha256_hex(*sym), file_digest("int8_sym_q"));
  EXPECT_EQ(part(*sym, "qweight"), file_digest("int8_sym_q"));
  EXPECT_EQ(part(*sym, "scales"), file_digest("int8_sym_s"));
  auto asym = quantize("quantize:int8:asym");
  EXPECT_EQ(asym->dtype(), DType::u8);
  EXPECT_EQ(part(*asym, "qweight"), file_digest("int8_asym_q"));
  EXPECT_EQ(part(*asym, "scales"), file_digest("int8_asym_s"));
  EXPECT_EQ(part(*asym, "qzeros"), file_digest("int8_asym_z"));
}

TEST_F(QuantizeReference, Int4MatchesTorch) {
  auto q = quantize("quantize:int4:32");
  EXPECT_EQ(q->shape(), (Shape{64, 128}));
  EXPECT_EQ(part(*q, "qweight"), file_digest("int4_q"));
  EXPECT_EQ(q->parts().at("scales")->shape(), (Shape{64, 8}));
  EXPECT_EQ(part(*q, "scales"), file_digest("int4_s"));
  EXPECT_EQ(part(*q, "zeros"), file_digest("int4_z"));
}

TEST_F(QuantizeReference, Fp8MatchesTheSpecTable) {
  for (const char* format : {"e4m3", "e5m2"}) {
    auto q = quantize(std::string("quantize:fp8:") + format);
    EXPECT_EQ(part(*q, "qweight"), file_digest(std::string("fp8_") + format + "_q")) << format;
    EXPECT_EQ(part(*q, "scale"), file_digest(std::string("fp8_") + format + "_s")) << format;
    EXPECT_TRUE(q->parts().at("scale")->shape().empty());
  }
}

TEST_F(QuantizeReference, GptqPackingMatchesAutoGptq) {
  for (int bits : {2, 3, 4, 8}) {
    auto q = quantize(fmt::format("quantize:gptq:{}:64", bits));
    const std::string tag = fmt::format("gptq{}_", bits);
    EXPECT_EQ(q->shape(), (Shape{256 * bits / 32, 64}));
    EXPECT_EQ(part(*q, "qweight"), file_digest(tag + "qweight")) << bits;
    EXPECT_EQ(part(*q, "qzeros"), file_digest(tag + "qzeros")) << bits;
    EXPECT_EQ(part(*q, "scales"), file_digest(tag + "scales")) << bits;
    EXPECT_FALSE(q->parts().contains("g_idx"));
  }
  auto act = quantize("quantize:gptq:4:64:desc_act");
  const auto g_idx = act->parts().at("g_idx")->as<int32_t>();
  ASSERT_EQ(g_idx.size(), 256u);
  for (size_t i = 0; i < g_idx.size(); ++i) EXPECT_EQ(g_idx[i], static_cast<int32_t>(i / 64));
}

TEST_F(QuantizeReference, AwqPackingMatchesAutoAwq) {
  auto default_group = quantize("quantize:awq:4:zp");  // group size 128 when not given
  EXPECT_EQ(default_group->parts().at("scales")->shape(), (Shape{2, 64}));
  for (bool zero_point : {true, false}) {
    auto q = quantize(zero_point ? "quantize:awq:4:64:zp" : "quantize:awq:4:64");
    const std::string tag = zero_point ? "awq_zp_" : "awq_sym_";
    EXPECT_EQ(q->shape(), (Shape{256, 8}));
    EXPECT_EQ(part(*q, "qweight"), file_digest(tag + "qweight")) << tag;
    EXPECT_EQ(part(*q, "qzeros"), file_digest(tag + "qzeros")) << tag;
    EXPECT_EQ(part(*q, "scales"), file_digest(tag + "scales")) << tag;
  }
}

void expect_same_floats(const Tensor& t, const std::vector<float>& want) {
  ASSERT_EQ(t.dtype(), DType::f32);
  auto got = t.as<float>();
  ASSERT_EQ(got.size(), want.size());
  size_t bad = 0;
  for (size_t i = 0; i < want.size(); ++i) bad += got[i] != want[i];
  EXPECT_EQ(bad, 0u);
}

TEST_F(QuantizeReference, DequantizesReferenceCheckpoints) {
  using Scheme = QuantizeConfig::Scheme;
  auto gptq =
      load_dequantized(*loader_, {.source = WeightSource::file(dir_->path() / "gptq.safetensors"),
                                  .base = "layer",
                                  .scheme = Scheme::gptq,
                                  .dtype = DType::f32});
  EXPECT_EQ(gptq->shape(), (Shape{64, 256}));
  expect_same_floats(*gptq, floats("gptq_dense"));
  auto gptq3 =
      load_dequantized(*loader_, {.source = WeightSource::file(dir_->path() / "gptq3.safetensors"),
                                  .base = "layer",
                                  .scheme = Scheme::gptq,
                                  .dtype = DType::f32});
  EXPECT_EQ(gptq3->shape(), (Shape{64, 256}));
  expect_same_floats(*gptq3, floats("gptq3_dense"));
  auto awq =
      load_dequantized(*loader_, {.source = WeightSource::file(dir_->path() / "awq.safetensors"),
                                  .base = "layer",
                                  .scheme = Scheme::awq,
                                  .dtype = DType::f32});
  expect_same_floats(*awq, floats("awq_dense"));
  auto fp8 =
      load_dequantized(*loader_, {.source = WeightSource::file(dir_->path() / "fp8.safetensors"),
                                  .base = "layer",
                                  .scheme = Scheme::fp8,
                                  .dtype = DType::f32});
  EXPECT_EQ(fp8->shape(), (Shape{200, 300}));
  expect_same_floats(*fp8, floats("fp8_dense"));
  auto half =
      load_dequantized(*loader_, {.source = WeightSource::file(dir_->path() / "awq.safetensors"),
                                  .base = "layer",
                                  .scheme = Scheme::awq});
  EXPECT_EQ(half->dtype(), DType::f16);
}

// quantize -> dequantize stays within half a quantization step of each element's group (0.75
// of a step where the file stores the scale as f16), or the FP8 format's relative precision.
TEST_F(QuantizeReference, RoundTripsWithinHalfAStep) {
  using Scheme = QuantizeConfig::Scheme;
  const auto w = floats("w");
  struct Case {
    std::string steps;
    Scheme scheme;
    double max_error;
  };
  const std::vector<Case> cases = {
      {"quantize:int8:sym", Scheme::int8, 0.5 * 4.5 / 127 * 1.01},
      {"quantize:int8:asym", Scheme::int8, 0.5 * 9.0 / 255 * 1.01},
      {"quantize:int4:32", Scheme::int4, 0.5 * 9.0 / 15 * 1.01},
      {"quantize:gptq:4:64", Scheme::gptq, 0.75 * 9.0 / 15},
      {"quantize:gptq:8:64:desc_act", Scheme::gptq, 0.75 * 9.0 / 255},
      {"quantize:awq:4:zp", Scheme::awq, 0.75 * 9.0 / 15},
      {"quantize:fp8:e4m3", Scheme::fp8, 4.5 / 16},
      {"quantize:fp8:e5m2", Scheme::fp8, 4.5 / 8},
  };
  for (const Case& c : cases) {
    auto bundle = quantize(c.steps);
    auto dense = dequantize(*bundle, c.scheme);
    ASSERT_EQ(dense->shape(), (Shape{64, 256})) << c.steps;
    auto got = dense->as<float>();
    double worst = 0;
    for (size_t i = 0; i < w.size(); ++i) worst = std::max(worst, std::fabs(double(got[i]) - w[i]));
    EXPECT_LT(worst, c.max_error) << c.steps;
    EXPECT_GT(worst, 0.0) << c.steps;
  }
}

}  // namespace
}  // namespace ballast::test
