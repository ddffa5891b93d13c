// One ONNX TensorProto -> one TensorEntry: the data_type id, the dims, and where the bytes are.
//
// Data types: 1 FLOAT f32, 2 UINT8 u8, 3 INT8 i8, 4 UINT16 u16, 5 INT16 i16, 6 INT32 i32,
// 7 INT64 i64, 9 BOOL bool, 10 FLOAT16 f16, 11 DOUBLE f64, 12 UINT32 u32, 13 UINT64 u64,
// 14 COMPLEX64 c64, 15 COMPLEX128 c128, 16 BFLOAT16 bf16, 17 FLOAT8E4M3FN f8_e4m3,
// 18 FLOAT8E4M3FNUZ f8_e4m3fnuz, 19 FLOAT8E5M2 f8_e5m2, 20 FLOAT8E5M2FNUZ f8_e5m2fnuz,
// 21 UINT4 u4, 22 INT4 i4, 23 FLOAT4E2M1 f4_e2m1. 8 STRING is not a tensor dtype: such tensors
// are skipped. 0 is invalid; other ids are unsupported.
//
// Storage, exactly one of:
//  * raw_data: little-endian bytes, used in place (a slice of the model's ByteSource);
//  * external data (see onnx_external.hpp): a slice of the external file;
//  * a typed field, decoded into memory: float_data (f32, c64 as re/im pairs), double_data
//    (f64, c128), int64_data (i64), uint64_data (u64, u32), int32_data (i32, i16, u16, i8, u8,
//    bool, the bits of f16 / bf16 / fp8, and two 4-bit values per entry, low nibble first).
//    The number of values must match the element count exactly.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "ballast/limits.hpp"
#include "ballast/parser.hpp"
#include "formats/onnx/onnx_external.hpp"
#include "formats/onnx/protobuf_wire.hpp"

namespace ballast {

struct DecodedTensor {
  std::string proto_name;            // the TensorProto's own `name` field
  std::optional<TensorEntry> entry;  // empty when the tensor is skipped
  std::string skip_reason;           // why, when skipped
};

// Decodes the TensorProto in `span`. The entry is named `entry_name`, or the proto's own name
// when `entry_name` is empty. Errors name the tensor.
DecodedTensor decode_tensor_proto(WireInput& in, WireSpan span, std::string_view entry_name,
                                  const Limits& limits, ExternalFiles& external);

}  // namespace ballast
