// The ONNX format (https://onnx.ai): a protobuf ModelProto whose weights are the graph
// initializers and Constant-node values (see onnx_model.hpp), stored inline, in typed fields or
// in external files beside the model (see onnx_tensor.hpp and onnx_external.hpp).
//
// ONNX has no magic number. The probe accepts a file whose first field is ir_version (tag 0x08,
// value 1..100) followed, as far as the probe window reaches, by well-formed fields that a
// ModelProto defines, with lengths inside the file. It is weak, so the parser registers last.
#pragma once

#include <memory>

#include "ballast/parser.hpp"

namespace ballast {

std::shared_ptr<const FormatParser> make_onnx_parser();

}  // namespace ballast
