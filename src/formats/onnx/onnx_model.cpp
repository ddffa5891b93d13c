// ModelProto / GraphProto / NodeProto walking (see onnx_model.hpp).
#include "formats/onnx/onnx_model.hpp"

#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ballast/error.hpp"
#include "formats/onnx/onnx_schema.hpp"
#include "formats/onnx/onnx_tensor.hpp"
#include "formats/onnx/protobuf_wire.hpp"
#include "util/error_text.hpp"
#include "util/json_text.hpp"
#include "util/op_count.hpp"

namespace ballast {
namespace {

namespace mf = onnx_field::model;
namespace gf = onnx_field::graph;
namespace nf = onnx_field::node;
namespace af = onnx_field::attribute;

using nlohmann::json;

constexpr std::string_view kInfoKey = "__onnx__";

// The node fields needed before its attributes are looked at.
struct NodeHeader {
  std::string output;  // the first output
  std::string name;
  std::string op_type;
  std::string domain;
  bool is_constant() const {
    return op_type == "Constant" && (domain.empty() || domain == "ai.onnx");
  }
};

// The fields of one AttributeProto read in a first pass; graphs are walked in a second.
struct Attribute {
  std::string name;
  WireSpan span;
  std::optional<WireField> f, i, t;
  bool sparse = false;
};

class ModelWalker {
 public:
  explicit ModelWalker(const ParseContext& ctx)
      : ctx_(ctx),
        in_(ctx.source),
        external_(ctx.open_sibling, ctx.source->name(), ctx.verify_checksums) {}

  Index run() {
    WireSpan graph = read_model();
    walk_graph(graph, "", 0);
    if (!tensor_names_.empty()) info_["tensor_names"] = tensor_names_;
    if (!skipped_.empty()) info_["skipped"] = skipped_;
    json extra = metadata_;
    extra[kInfoKey] = info_;
    Index index;
    index.format = WeightFormat::onnx();
    index.tensors = std::move(tensors_);
    index.extra = lossy_json_text(extra);
    return index;
  }

 private:
  [[noreturn]] void fail(ErrorCode code, std::string message, uint64_t offset,
                         std::string tensor = {}) const {
    throw Error(code, std::move(message),
                {.source = in_.name(), .tensor = std::move(tensor), .offset = offset});
  }

  std::string text(const WireField& f, std::string_view what) {
    return read_wire_string(in_, f, ctx_.limits.max_string_length, what);
  }

  // ModelProto: header fields and metadata; returns the graph.
  WireSpan read_model() {
    std::optional<WireSpan> graph;
    MessageReader reader(in_, {0, in_.size()});
    WireField f;
    while (reader.next(f)) {
      switch (f.number) {
        case mf::ir_version:
        case mf::model_version:
          expect_wire_type(in_, f, WireType::varint, "ModelProto version");
          info_[f.number == mf::ir_version ? "ir_version" : "model_version"] =
              static_cast<int64_t>(f.value);
          break;
        case mf::producer_name: info_["producer_name"] = text(f, "producer_name"); break;
        case mf::producer_version: info_["producer_version"] = text(f, "producer_version"); break;
        case mf::domain: info_["domain"] = text(f, "ModelProto.domain"); break;
        case mf::opset_import: read_opset(f); break;
        case mf::metadata_props: read_metadata(f); break;
        case mf::graph:
          expect_wire_type(in_, f, WireType::len, "ModelProto.graph");
          if (graph) fail(ErrorCode::invalid_format, "ModelProto has two graphs", f.offset);
          graph = f.payload();
          break;
        default: break;
      }
    }
    if (!graph) fail(ErrorCode::invalid_format, "ModelProto has no graph", 0);
    return *graph;
  }

  void count_metadata(uint64_t offset) {
    if (++metadata_entries_ > ctx_.limits.max_metadata_entries)
      fail(ErrorCode::limit_exceeded,
           limit_message("metadata entry count", std::nullopt, "max_metadata_entries",
                         ctx_.limits.max_metadata_entries),
           offset);
  }

  void read_opset(const WireField& field) {
    expect_wire_type(in_, field, WireType::len, "opset_import");
    count_metadata(field.offset);
    std::string domain;
    int64_t version = 0;
    MessageReader reader(in_, field.payload());
    WireField f;
    while (reader.next(f)) {
      if (f.number == onnx_field::opset::domain) domain = text(f, "opset_import domain");
      if (f.number == onnx_field::opset::version) {
        expect_wire_type(in_, f, WireType::varint, "opset_import version");
        version = static_cast<int64_t>(f.value);
      }
    }
    info_["opset_import"][domain.empty() ? "ai.onnx" : domain] = version;
  }

  void read_metadata(const WireField& field) {
    count_metadata(field.offset);
    StringEntry e = read_string_entry(in_, field, ctx_.limits.max_string_length, "metadata_props");
    if (e.key == kInfoKey)
      fail(ErrorCode::invalid_format,
           fmt::format("metadata_props key '{}' is reserved by ballast", kInfoKey), field.offset);
    if (metadata_.contains(e.key))
      fail(ErrorCode::invalid_format, fmt::format("metadata_props key '{}' appears twice", e.key),
           field.offset);
    metadata_[e.key] = std::move(e.value);
  }

  void walk_graph(WireSpan span, const std::string& path, uint32_t depth) {
    if (depth > kMaxGraphDepth)
      fail(ErrorCode::limit_exceeded,
           fmt::format("subgraphs nest deeper than {} levels (at '{}')", kMaxGraphDepth, path),
           span.offset);
    MessageReader reader(in_, span);
    WireField f;
    while (reader.next(f)) {
      if (f.number == gf::initializer) {
        expect_wire_type(in_, f, WireType::len, "GraphProto.initializer");
        add(decode_tensor_proto(in_, f.payload(), {}, ctx_.limits, external_), path, f.offset);
      } else if (f.number == gf::sparse_initializer) {
        fail(ErrorCode::unsupported,
             fmt::format("sparse initializers are not supported (graph '{}')", path), f.offset);
      } else if (f.number == gf::node) {
        expect_wire_type(in_, f, WireType::len, "GraphProto.node");
        walk_node(f.payload(), path, depth);
      }
    }
  }

  NodeHeader read_node_header(WireSpan span) {
    NodeHeader h;
    bool have_output = false;
    MessageReader reader(in_, span);
    WireField f;
    while (reader.next(f)) {
      switch (f.number) {
        case nf::output:
          if (!have_output) h.output = text(f, "NodeProto.output");
          have_output = true;
          break;
        case nf::name: h.name = text(f, "NodeProto.name"); break;
        case nf::op_type: h.op_type = text(f, "NodeProto.op_type"); break;
        case nf::domain: h.domain = text(f, "NodeProto.domain"); break;
        default: break;
      }
    }
    return h;
  }

  Attribute read_attribute(WireSpan span) {
    Attribute a;
    a.span = span;
    MessageReader reader(in_, span);
    WireField f;
    while (reader.next(f)) {
      switch (f.number) {
        case af::name: a.name = text(f, "AttributeProto.name"); break;
        case af::f: a.f = f; break;
        case af::i: a.i = f; break;
        case af::t: a.t = f; break;
        case af::sparse_tensor: a.sparse = true; break;
        default: break;
      }
    }
    return a;
  }

  void walk_node(WireSpan span, const std::string& path, uint32_t depth) {
    const NodeHeader node = read_node_header(span);
    MessageReader reader(in_, span);
    WireField f;
    while (reader.next(f)) {
      if (f.number != nf::attribute) continue;
      expect_wire_type(in_, f, WireType::len, "NodeProto.attribute");
      const Attribute attr = read_attribute(f.payload());
      if (node.is_constant()) constant(node, attr, path, f.offset);
      walk_subgraphs(
          f.payload(),
          fmt::format("{}/{}.{}", path, node.name.empty() ? node.op_type : node.name, attr.name),
          depth);
    }
  }

  void walk_subgraphs(WireSpan attribute, const std::string& label, uint32_t depth) {
    MessageReader reader(in_, attribute);
    WireField f;
    size_t index = 0;
    while (reader.next(f)) {
      if (f.number != af::g && f.number != af::graphs) continue;
      expect_wire_type(in_, f, WireType::len, "AttributeProto graph");
      const std::string sub = f.number == af::g ? label : fmt::format("{}[{}]", label, index++);
      walk_graph(f.payload(), sub, depth + 1);
    }
  }

  // The weight a Constant node's attribute defines, if any.
  void constant(const NodeHeader& node, const Attribute& attr, const std::string& path,
                uint64_t offset) {
    const bool weight = attr.name == "value" || attr.name == "value_float" ||
                        attr.name == "value_floats" || attr.name == "value_int" ||
                        attr.name == "value_ints" || attr.name == "sparse_value";
    if (!weight) return;
    if (node.output.empty())
      fail(ErrorCode::invalid_format, "Constant node has no output name", offset);
    if (attr.sparse)
      fail(ErrorCode::unsupported, "sparse Constant values are not supported", offset, node.output);
    if (attr.name == "value" && attr.t) {
      expect_wire_type(in_, *attr.t, WireType::len, "AttributeProto.t");
      DecodedTensor t =
          decode_tensor_proto(in_, attr.t->payload(), node.output, ctx_.limits, external_);
      if (!t.proto_name.empty() && t.proto_name != node.output)
        tensor_names_[node.output] = t.proto_name;
      add(std::move(t), path, offset);
      return;
    }
    if (auto t = scalar_constant(node.output, attr)) add(std::move(*t), path, offset);
  }

  // value_float / value_floats / value_int / value_ints as an f32 or i64 tensor. The lists are
  // repeated fields, packed or not, possibly empty.
  std::optional<DecodedTensor> scalar_constant(const std::string& name, const Attribute& attr) {
    TensorEntry e;
    e.name = name;
    std::vector<std::byte> bytes;
    if (attr.name == "value_float" && attr.f) {
      expect_wire_type(in_, *attr.f, WireType::fixed32, "value_float");
      e.dtype = DType::f32;
      append_fixed(in_, *attr.f, 4, "value_float", bytes);
    } else if (attr.name == "value_int" && attr.i) {
      expect_wire_type(in_, *attr.i, WireType::varint, "value_int");
      e.dtype = DType::i64;
      append_i64(attr.i->value, bytes);
    } else if (attr.name == "value_floats" || attr.name == "value_ints") {
      const bool floats = attr.name == "value_floats";
      e.dtype = floats ? DType::f32 : DType::i64;
      MessageReader reader(in_, attr.span);
      WireField f;
      while (reader.next(f)) {
        if (floats && f.number == af::floats) append_fixed(in_, f, 4, attr.name, bytes);
        if (!floats && f.number == af::ints)
          for_each_varint(in_, f, attr.name, [&](uint64_t v) { append_i64(v, bytes); });
      }
      e.shape = {static_cast<int64_t>(bytes.size() / (floats ? 4 : 8))};
    } else {
      return std::nullopt;
    }
    e.data = make_memory_source(std::move(bytes), in_.name());
    return DecodedTensor{.proto_name = {}, .entry = std::move(e), .skip_reason = {}};
  }

  static void append_i64(uint64_t v, std::vector<std::byte>& out) {
    for (int b = 0; b < 8; ++b) out.push_back(static_cast<std::byte>(v >> (8 * b)));
  }

  void add(DecodedTensor t, const std::string& path, uint64_t offset) {
    const std::string name = t.entry ? t.entry->name : t.proto_name;
    if (name.empty())
      fail(ErrorCode::invalid_format,
           fmt::format("unnamed tensor in graph '{}'", path.empty() ? "main" : path), offset);
    auto [it, fresh] = graph_of_.emplace(name, path);
    if (!fresh)
      fail(ErrorCode::invalid_format,
           fmt::format("tensor name appears twice (graph '{}' and graph '{}')",
                       it->second.empty() ? "main" : it->second, path.empty() ? "main" : path),
           offset, name);
    if (!t.entry) {
      skipped_[name] = t.skip_reason;
      return;
    }
    if (tensors_.size() >= ctx_.limits.max_tensors)
      fail(ErrorCode::limit_exceeded,
           limit_message("tensor count", std::nullopt, "max_tensors", ctx_.limits.max_tensors),
           offset);
    tensors_.push_back(std::move(*t.entry));
  }

  const ParseContext& ctx_;
  WireInput in_;
  ExternalFiles external_;
  std::vector<TensorEntry> tensors_;
  // tensor name -> graph path; its comparisons are counted (parser_scaling_test)
  std::unordered_map<std::string, std::string, StringHash, CountedEqual> graph_of_;
  json metadata_ = json::object();
  json info_ = json::object();
  json tensor_names_ = json::object();
  json skipped_ = json::object();
  uint64_t metadata_entries_ = 0;
};

}  // namespace

Index read_onnx_model(const ParseContext& context) { return ModelWalker(context).run(); }

}  // namespace ballast
