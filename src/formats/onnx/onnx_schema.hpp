// The part of onnx.proto (https://github.com/onnx/onnx/blob/main/onnx/onnx.proto) that ballast
// reads: field numbers of the messages on the path to a weight, and StringStringEntryProto.
// Every other field is skipped by wire type.
#pragma once

#include <cstdint>
#include <string>

#include "formats/onnx/protobuf_wire.hpp"

namespace ballast::onnx_field {

namespace model {  // ModelProto
inline constexpr uint32_t ir_version = 1, producer_name = 2, producer_version = 3, domain = 4,
                          model_version = 5, doc_string = 6, graph = 7, opset_import = 8,
                          metadata_props = 14, training_info = 20, functions = 25;
}
namespace opset {  // OperatorSetIdProto
inline constexpr uint32_t domain = 1, version = 2;
}
namespace entry {  // StringStringEntryProto
inline constexpr uint32_t key = 1, value = 2;
}
namespace graph {  // GraphProto
inline constexpr uint32_t node = 1, initializer = 5, sparse_initializer = 15;
}
namespace node {  // NodeProto
inline constexpr uint32_t output = 2, name = 3, op_type = 4, attribute = 5, domain = 7;
}
namespace attribute {  // AttributeProto
inline constexpr uint32_t name = 1, f = 2, i = 3, t = 5, g = 6, floats = 7, ints = 8, graphs = 11,
                          sparse_tensor = 22;
}
namespace tensor {  // TensorProto
inline constexpr uint32_t dims = 1, data_type = 2, segment = 3, float_data = 4, int32_data = 5,
                          string_data = 6, int64_data = 7, name = 8, raw_data = 9, double_data = 10,
                          uint64_data = 11, external_data = 13, data_location = 14;
inline constexpr uint64_t location_default = 0, location_external = 1;
}  // namespace tensor

}  // namespace ballast::onnx_field

namespace ballast {

struct StringEntry {
  std::string key;
  std::string value;
};

// Reads one StringStringEntryProto (metadata_props, external_data); strings are bounded by
// `max_length` bytes.
StringEntry read_string_entry(WireInput& in, const WireField& field, uint64_t max_length,
                              std::string_view what);

}  // namespace ballast
