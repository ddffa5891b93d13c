// The ONNX FormatParser: content probe and parse entry point (see onnx_parser.hpp).
#include "formats/onnx/onnx_parser.hpp"

#include <optional>

#include "formats/onnx/onnx_model.hpp"
#include "formats/onnx/onnx_schema.hpp"

namespace ballast {
namespace {

namespace mf = onnx_field::model;

constexpr uint64_t kMaxIrVersion = 100;
constexpr int kProbeFields = 4;

// A varint inside `head` at `pos` (advanced), or nullopt when malformed or cut off.
std::optional<uint64_t> head_varint(std::span<const std::byte> head, size_t& pos) {
  uint64_t value = 0;
  for (int i = 0; i < 10 && pos < head.size(); ++i) {
    const auto b = static_cast<uint8_t>(head[pos++]);
    value |= static_cast<uint64_t>(b & 0x7F) << (7 * i);
    if ((b & 0x80) == 0) return value;
  }
  return std::nullopt;
}

// The wire type ModelProto gives field `number`, or nullopt for a field it does not define.
std::optional<uint64_t> model_wire_type(uint64_t number) {
  switch (number) {
    case mf::ir_version:
    case mf::model_version: return 0;
    case mf::producer_name:
    case mf::producer_version:
    case mf::domain:
    case mf::doc_string:
    case mf::graph:
    case mf::opset_import:
    case mf::metadata_props:
    case mf::training_info:
    case mf::functions: return 2;
    default: return std::nullopt;
  }
}

class OnnxParser final : public FormatParser {
 public:
  WeightFormat format() const override { return WeightFormat::onnx(); }
  std::vector<std::string> extensions() const override { return {".onnx"}; }

  bool probe(std::span<const std::byte> head, uint64_t total_size) const override {
    size_t pos = 0;
    for (int fields = 0; fields < kProbeFields && pos < head.size(); ++fields) {
      const auto tag = head_varint(head, pos);
      if (!tag) return pos == head.size() && head.size() < total_size && fields > 0;
      const auto wire_type = model_wire_type(*tag >> 3);
      if (!wire_type || *wire_type != (*tag & 7)) return false;
      if (fields == 0 && *tag >> 3 != mf::ir_version) return false;
      const auto value = head_varint(head, pos);
      if (!value) return pos == head.size() && head.size() < total_size && fields > 0;
      if (*tag >> 3 == mf::ir_version && (*value == 0 || *value > kMaxIrVersion)) return false;
      if (*wire_type == 2) {
        if (*value > total_size - pos) return false;
        pos += static_cast<size_t>(std::min<uint64_t>(*value, head.size() - pos));
      }
    }
    return pos > 0;
  }

  Index parse(const ParseContext& context) const override { return read_onnx_model(context); }
};

}  // namespace

std::shared_ptr<const FormatParser> make_onnx_parser() { return std::make_shared<OnnxParser>(); }

}  // namespace ballast
