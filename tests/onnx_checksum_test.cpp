// ONNX external-data checksums: a file whose SHA-1 matches loads, a mismatch fails with
// `integrity` (unless integrity checks are turned off), and the check reads each file once.
#include <gtest/gtest.h>

#include "ballast/ballast.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

constexpr const char* kWriter = R"PY(
import hashlib, os, sys, numpy as np, onnx
from onnx import helper, numpy_helper
out, checksum = sys.argv[1], sys.argv[2]
w = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "w")
b = numpy_helper.from_array(np.ones(3, dtype=np.float32), "b")
data = w.raw_data + b.raw_data
open(os.path.join(out, "weights.bin"), "wb").write(data)
digest = hashlib.sha1(data).hexdigest() if checksum == "good" else "0" * 40
for t, offset in ((w, 0), (b, len(w.raw_data))):
    length = len(t.raw_data)
    t.ClearField("raw_data")
    t.data_location = onnx.TensorProto.EXTERNAL
    for k, v in (("location", "weights.bin"), ("offset", str(offset)), ("length", str(length)), ("checksum", digest)):
        e = t.external_data.add(); e.key = k; e.value = v
graph = helper.make_graph([helper.make_node("Add", ["x", "b"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [3])],
                          [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [3])], [w, b])
open(os.path.join(out, "model.onnx"), "wb").write(helper.make_model(graph).SerializeToString())
)PY";

class OnnxChecksum : public testing::Test {
 protected:
  void SetUp() override { BALLAST_REQUIRE_PYTHON("onnx"); }
  WeightSource write(const char* checksum) {
    run_python(kWriter, {dir_.path().string(), checksum});
    return WeightSource::file(dir_ / "model.onnx");
  }
  TempDir dir_;
};

TEST_F(OnnxChecksum, AMatchingChecksumLoads) {
  auto source = write("good");
  auto loader = make_weight_loader();
  auto w = loader->load_tensor(TensorSpec{.name = "w", .source = source});
  EXPECT_EQ(w->as<float>()[5], 5.0f);
  EXPECT_EQ(loader->get_metadata(source).tensors.size(), 2u);
}

TEST_F(OnnxChecksum, AMismatchFailsWithIntegrity) {
  auto source = write("bad");
  try {
    make_weight_loader()->get_metadata(source);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::integrity) << e.what();
    EXPECT_NE(std::string(e.what()).find("weights.bin"), std::string::npos) << e.what();
  }
  auto unchecked = make_weight_loader({.enable_integrity_checks = false});
  EXPECT_EQ(unchecked->load_tensor(TensorSpec{.name = "b", .source = source})->as<float>()[0],
            1.0f);
}

}  // namespace
}  // namespace ballast::test
