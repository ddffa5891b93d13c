// ONNX models written by Debian's onnx 1.12 (through /usr/bin/python3): inline, external data in
// one file and per tensor, typed fields, FP8 / 4-bit / complex tensors, and Constant nodes and
// initializers inside If subgraphs. Every tensor must hash as numpy computes it.
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "ballast/ballast.hpp"
#include "support/test_support.hpp"

namespace ballast {
namespace {

using nlohmann::json;

// Writes inline.onnx, ext_one/model.onnx (+ weights.bin) and ext_per/model.onnx (+ one file per
// tensor) into argv[1]; prints {name: {dtype, shape, sha256}}.
constexpr const char* kWriter = R"PY(
import hashlib, json, os, sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
expect = {}

def rec(name, dtype, arr_or_bytes, shape=None):
    data = arr_or_bytes if isinstance(arr_or_bytes, bytes) else arr_or_bytes.tobytes()
    shape = list(arr_or_bytes.shape) if shape is None else shape
    expect[name] = dict(dtype=dtype, shape=shape, sha256=hashlib.sha256(data).hexdigest())

def raw_proto(name, data_type, dims, raw=None, int32=None):
    t = TensorProto()
    t.name, t.data_type = name, data_type
    t.dims.extend(dims)
    if raw is not None: t.raw_data = raw
    if int32 is not None: t.int32_data.extend(int32)
    return t

def build():
    rng = np.random.default_rng(7)
    inits = []
    def add(name, dtype, arr):
        inits.append(numpy_helper.from_array(arr, name)); rec(name, dtype, arr)
    add("w_f32", "f32", rng.standard_normal((3, 5)).astype(np.float32))
    add("big_f16", "f16", rng.standard_normal((40, 50)).astype(np.float16))
    add("big_f32", "f32", rng.standard_normal((128, 256)).astype(np.float32))  # > one 64 KiB chunk
    add("i64_vec", "i64", np.arange(-5, 5, dtype=np.int64))
    add("u16_mat", "u16", np.arange(12, dtype=np.uint16).reshape(3, 4))
    add("c128_vec", "c128", np.array([1 + 2j, -3.5 - 0.25j], dtype=np.complex128))
    add("scalar_f64", "f64", np.array(2.75, dtype=np.float64))
    add("empty_i32", "i32", np.zeros((0, 4), dtype=np.int32))
    # typed fields (raw=False)
    f = rng.standard_normal((2, 3)).astype(np.float32)
    inits.append(helper.make_tensor("t_float", TensorProto.FLOAT, [2, 3], f.flatten().tolist())); rec("t_float", "f32", f)
    for name, tp, dt, np_t, vals in [
            ("t_i8", TensorProto.INT8, "i8", np.int8, [-128, -1, 0, 7, 127]),
            ("t_u8", TensorProto.UINT8, "u8", np.uint8, [0, 1, 200, 255]),
            ("t_i16", TensorProto.INT16, "i16", np.int16, [-32768, -2, 3, 32767]),
            ("t_u16", TensorProto.UINT16, "u16", np.uint16, [0, 65535, 1234]),
            ("t_i32", TensorProto.INT32, "i32", np.int32, [-(2**31), -1, 5, 2**31 - 1]),
            ("t_i64", TensorProto.INT64, "i64", np.int64, [-(2**63), -1, 2**63 - 1]),
            ("t_u32", TensorProto.UINT32, "u32", np.uint32, [0, 2**32 - 1, 77]),
            ("t_u64", TensorProto.UINT64, "u64", np.uint64, [0, 2**64 - 1, 99]),
            ("t_f64", TensorProto.DOUBLE, "f64", np.float64, [1.5, -1e300, 3.0])]:
        inits.append(helper.make_tensor(name, tp, [len(vals)], vals))
        rec(name, dt, np.array(vals, dtype=np_t))
    b = np.array([True, False, True, True])
    inits.append(helper.make_tensor("t_bool", TensorProto.BOOL, [4], b.tolist())); rec("t_bool", "bool", b)
    h = np.array([1.0, -2.5, 65504.0], dtype=np.float16)
    inits.append(helper.make_tensor("t_f16", TensorProto.FLOAT16, [3], h.tolist())); rec("t_f16", "f16", h)
    c = np.array([1 - 1j, 0.5 + 4j], dtype=np.complex64)
    inits.append(helper.make_tensor("t_c64", TensorProto.COMPLEX64, [2], c.tolist())); rec("t_c64", "c64", c)
    bf = np.array([0x3F80, 0xC000, 0x7F80], dtype=np.uint16)
    inits.append(raw_proto("t_bf16", TensorProto.BFLOAT16, [3], int32=bf.tolist())); rec("t_bf16", "bf16", bf)
    # types newer than onnx 1.12: data_type ids set by hand
    f8 = bytes([0x00, 0x38, 0xC0, 0x7E])
    inits.append(raw_proto("f8_e4m3_raw", 17, [4], raw=f8)); rec("f8_e4m3_raw", "f8_e4m3", f8, [4])
    inits.append(raw_proto("f8_e5m2_typed", 19, [2, 2], int32=list(f8))); rec("f8_e5m2_typed", "f8_e5m2", f8, [2, 2])
    inits.append(raw_proto("f8_e4m3fnuz_raw", 18, [4], raw=f8)); rec("f8_e4m3fnuz_raw", "f8_e4m3fnuz", f8, [4])
    inits.append(raw_proto("f8_e5m2fnuz_typed", 20, [4], int32=list(f8))); rec("f8_e5m2fnuz_typed", "f8_e5m2fnuz", f8, [4])
    nib = bytes([0x21, 0xF3, 0x8A])
    inits.append(raw_proto("i4_raw", 22, [6], raw=nib)); rec("i4_raw", "i4", nib, [6])
    inits.append(raw_proto("u4_typed", 21, [2, 3], int32=list(nib))); rec("u4_typed", "u4", nib, [2, 3])
    inits.append(raw_proto("f4_raw", 23, [6], raw=nib)); rec("f4_raw", "f4_e2m1", nib, [6])
    # If with a Constant (TensorProto named differently) and an initializer in each branch
    x = rng.standard_normal((4, 4)).astype(np.float32)
    y = np.arange(6, dtype=np.int32).reshape(2, 3)
    then_g = helper.make_graph(
        [helper.make_node("Constant", [], ["then_out"], value=numpy_helper.from_array(x, "inner_x"))],
        "then", [], [helper.make_tensor_value_info("then_out", TensorProto.FLOAT, [4, 4])],
        initializer=[numpy_helper.from_array(y, "then_init")])
    rec("then_out", "f32", x); rec("then_init", "i32", y)
    else_g = helper.make_graph(
        [helper.make_node("Constant", [], ["else_out"], value_floats=[1.0, 2.0, 3.0]),
         helper.make_node("Constant", [], ["else_int"], value_int=-42)],
        "else", [], [helper.make_tensor_value_info("else_out", TensorProto.FLOAT, [3])])
    rec("else_out", "f32", np.array([1, 2, 3], dtype=np.float32))
    rec("else_int", "i64", np.array(-42, dtype=np.int64))
    nodes = [helper.make_node("Constant", [], ["main_const"], value_float=0.5),
             helper.make_node("If", ["cond"], ["res"], then_branch=then_g, else_branch=else_g)]
    rec("main_const", "f32", np.array(0.5, dtype=np.float32))
    g = helper.make_graph(nodes, "main", [helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
                          [helper.make_tensor_value_info("res", TensorProto.FLOAT, None)], initializer=inits)
    m = helper.make_model(g, producer_name="ballast-test", opset_imports=[helper.make_opsetid("", 13)])
    helper.set_model_props(m, {"author": "ballast", "license": "MIT"})
    return m

onnx.save_model(build(), os.path.join(out, "inline.onnx"))
for sub, one in (("ext_one", True), ("ext_per", False)):
    os.makedirs(os.path.join(out, sub))
    onnx.save_model(build(), os.path.join(out, sub, "model.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=one, location="weights.bin", size_threshold=0,
                    convert_attribute=True)
print(json.dumps(expect))
)PY";

class OnnxGenerated : public ::testing::Test {
 protected:
  void SetUp() override {
    BALLAST_REQUIRE_PYTHON("onnx");
    expected_ = json::parse(test::run_python(kWriter, {dir_.path().string()}));
  }

  // Every expected tensor, and nothing else, loads with the expected dtype, shape and hash.
  void expect_model(const WeightSource& source, const WeightLoaderConfig& config = {}) {
    auto loader = make_weight_loader(config);
    WeightMetadata meta = loader->get_metadata(source);
    EXPECT_EQ(meta.tensors.size(), expected_.size());
    for (const auto& [name, want] : expected_.items()) {
      SCOPED_TRACE(name);
      ASSERT_TRUE(meta.tensors.contains(name));
      EXPECT_EQ(dtype_name(meta.tensors.at(name).dtype), want["dtype"].get<std::string>());
      EXPECT_EQ(meta.tensors.at(name).shape, want["shape"].get<Shape>());
      TensorRef t = loader->load_tensor(TensorSpec{.name = name, .source = source});
      EXPECT_EQ(sha256_hex(*t), want["sha256"].get<std::string>());
    }
    json extra = json::parse(meta.extra);
    EXPECT_EQ(extra["author"], "ballast");
    EXPECT_EQ(extra["license"], "MIT");
    EXPECT_EQ(extra["__onnx__"]["producer_name"], "ballast-test");
    EXPECT_EQ(extra["__onnx__"]["tensor_names"], json({{"then_out", "inner_x"}}));
  }

  test::TempDir dir_;
  json expected_;
};

TEST_F(OnnxGenerated, InlineModel) { expect_model(WeightSource::file(dir_ / "inline.onnx")); }

TEST_F(OnnxGenerated, InlineModelReadWithoutMmap) {
  WeightLoaderConfig config;
  config.read_mode = ReadMode::read;  // the wire reader reads the model in bounded chunks
  expect_model(WeightSource::file(dir_ / "inline.onnx"), config);
  expect_model(WeightSource::file(dir_ / "ext_one/model.onnx"), config);
}

TEST_F(OnnxGenerated, InlineModelFromMemory) {
  const std::string bytes = test::read_file(dir_ / "inline.onnx");
  expect_model(WeightSource::memory(MemorySource::copy_of(std::as_bytes(std::span(bytes)))));
}

TEST_F(OnnxGenerated, ExternalDataInOneFile) {
  ASSERT_TRUE(std::filesystem::exists(dir_ / "ext_one/weights.bin"));
  expect_model(WeightSource::file(dir_ / "ext_one/model.onnx"));
}

TEST_F(OnnxGenerated, ExternalDataPerTensor) {
  ASSERT_TRUE(std::filesystem::exists(dir_ / "ext_per/w_f32"));
  ASSERT_TRUE(std::filesystem::exists(dir_ / "ext_per/inner_x"));  // the Constant's own name
  expect_model(WeightSource::file(dir_ / "ext_per/model.onnx"));
}

TEST_F(OnnxGenerated, ExternalDataNeedsAFolder) {
  const std::string bytes = test::read_file(dir_ / "ext_one/model.onnx");
  auto source = WeightSource::memory(MemorySource::copy_of(std::as_bytes(std::span(bytes))));
  try {
    make_weight_loader()->get_metadata(source);
    FAIL() << "an in-memory model with external data must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported) << e.what();
  }
}

TEST_F(OnnxGenerated, CliHashMatchesNumpy) {
  auto r = test::run_command(test::shell_quote(test::cli_path()) + " hash --json " +
                             test::shell_quote((dir_ / "ext_one/model.onnx").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json got = json::parse(r.out)["tensors"];
  ASSERT_EQ(got.size(), expected_.size());
  for (const auto& [name, want] : expected_.items()) {
    EXPECT_EQ(got[name]["sha256"], want["sha256"]) << name;
    EXPECT_EQ(got[name]["dtype"], want["dtype"]) << name;
  }
}

}  // namespace
}  // namespace ballast
