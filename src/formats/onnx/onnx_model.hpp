// Walking an ONNX ModelProto to its weights.
//
// The tensors of a model are
//  * the initializers of the main graph and of every subgraph (node attributes of type GRAPH
//    or GRAPHS: If / Loop / Scan bodies, recursively), each under its own name;
//  * the weights of `Constant` nodes (domain "" or "ai.onnx") in any of those graphs, named by
//    the node's first output: attribute `value` (a TensorProto), `value_float` / `value_int`
//    (0-d f32 / i64) and `value_floats` / `value_ints` (1-d f32 / i64).
// A name that appears twice (in one graph or across graphs) is an error: ONNX scoping lets a
// subgraph shadow an outer name, but a flat Index cannot hold both. STRING tensors are skipped;
// sparse tensors are refused (unsupported). ConstantOfShape fill values, function bodies and
// training_info graphs are not weights of the model and are not read.
//
// Index::extra is a JSON object holding every metadata_props entry (key -> value), plus the key
// "__onnx__" with ir_version, producer_name, producer_version, domain, model_version,
// opset_import ({domain: version}, "" written as "ai.onnx"), `tensor_names` (Constant entries
// whose TensorProto has a different non-empty name: entry name -> TensorProto name) and
// `skipped` (tensor name -> reason). A metadata key "__onnx__" is refused.
//
// Bounds: subgraph nesting by kMaxGraphDepth, tensors by Limits::max_tensors, names and strings
// by max_string_length, metadata_props by max_metadata_entries, dims by max_dims.
#pragma once

#include <cstdint>

#include "ballast/parser.hpp"

namespace ballast {

inline constexpr uint32_t kMaxGraphDepth = 32;

Index read_onnx_model(const ParseContext& context);

}  // namespace ballast
