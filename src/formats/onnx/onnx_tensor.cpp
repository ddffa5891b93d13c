// TensorProto decoding (see onnx_tensor.hpp).
#include "formats/onnx/onnx_tensor.hpp"

#include <algorithm>
#include <array>
#include <charconv>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "formats/onnx/onnx_schema.hpp"
#include "util/checked.hpp"
#include "util/error_text.hpp"

namespace ballast {
namespace {

namespace tf = onnx_field::tensor;

constexpr uint64_t kStringType = 8;

struct OnnxDType {
  uint64_t id;
  DType dtype;
  uint32_t typed_field;  // the TensorProto field that may hold the values instead of raw_data
};

constexpr std::array kDTypes = {
    OnnxDType{1, DType::f32, tf::float_data},
    OnnxDType{2, DType::u8, tf::int32_data},
    OnnxDType{3, DType::i8, tf::int32_data},
    OnnxDType{4, DType::u16, tf::int32_data},
    OnnxDType{5, DType::i16, tf::int32_data},
    OnnxDType{6, DType::i32, tf::int32_data},
    OnnxDType{7, DType::i64, tf::int64_data},
    OnnxDType{9, DType::boolean, tf::int32_data},
    OnnxDType{10, DType::f16, tf::int32_data},
    OnnxDType{11, DType::f64, tf::double_data},
    OnnxDType{12, DType::u32, tf::uint64_data},
    OnnxDType{13, DType::u64, tf::uint64_data},
    OnnxDType{14, DType::c64, tf::float_data},
    OnnxDType{15, DType::c128, tf::double_data},
    OnnxDType{16, DType::bf16, tf::int32_data},
    OnnxDType{17, DType::f8_e4m3, tf::int32_data},
    OnnxDType{18, DType::f8_e4m3fnuz, tf::int32_data},
    OnnxDType{19, DType::f8_e5m2, tf::int32_data},
    OnnxDType{20, DType::f8_e5m2fnuz, tf::int32_data},
    OnnxDType{21, DType::u4, tf::int32_data},
    OnnxDType{22, DType::i4, tf::int32_data},
    OnnxDType{23, DType::f4_e2m1, tf::int32_data},
};

std::string_view typed_field_name(uint32_t number) {
  switch (number) {
    case tf::float_data: return "float_data";
    case tf::int32_data: return "int32_data";
    case tf::string_data: return "string_data";
    case tf::int64_data: return "int64_data";
    case tf::double_data: return "double_data";
    case tf::uint64_data: return "uint64_data";
    default: return "data";
  }
}

bool is_typed_field(uint32_t number) { return typed_field_name(number) != "data"; }

// What one pass over a TensorProto finds; the typed values are decoded in a second pass.
struct TensorFields {
  std::string name;
  Shape dims;
  std::optional<uint64_t> data_type;
  uint64_t data_location = tf::location_default;
  std::optional<WireField> raw_data;
  std::vector<uint32_t> typed_fields;  // distinct typed-field numbers present
  std::optional<ExternalData> external;
  bool segmented = false;
};

[[noreturn]] void fail(ErrorCode code, const WireInput& in, std::string message,
                       std::optional<uint64_t> offset = std::nullopt) {
  throw Error(code, std::move(message), {.source = in.name(), .offset = offset});
}

uint64_t parse_decimal(const WireInput& in, const StringEntry& entry, uint64_t offset) {
  uint64_t value = 0;
  const char* end = entry.value.data() + entry.value.size();
  auto [ptr, ec] = std::from_chars(entry.value.data(), end, value);
  if (entry.value.empty() || ec != std::errc() || ptr != end)
    fail(
        ErrorCode::invalid_format, in,
        fmt::format("external_data '{}' is '{}', not a decimal byte count", entry.key, entry.value),
        offset);
  return value;
}

void read_external_entry(WireInput& in, const WireField& field, const Limits& limits,
                         TensorFields& t) {
  StringEntry e = read_string_entry(in, field, limits.max_string_length, "external_data");
  if (!t.external) t.external.emplace();
  ExternalData& x = *t.external;
  auto duplicate = [&](bool seen) {
    if (seen)
      fail(ErrorCode::invalid_format, in,
           fmt::format("external_data key '{}' appears twice", e.key), field.offset);
  };
  if (e.key == "location") {
    duplicate(!x.location.empty());
    x.location = std::move(e.value);
    if (x.location.empty())
      fail(ErrorCode::invalid_format, in, "external_data location is empty", field.offset);
  } else if (e.key == "offset") {
    duplicate(x.offset.has_value());
    x.offset = parse_decimal(in, e, field.offset);
  } else if (e.key == "length") {
    duplicate(x.length.has_value());
    x.length = parse_decimal(in, e, field.offset);
  } else if (e.key == "checksum") {
    duplicate(x.checksum.has_value());
    x.checksum = std::move(e.value);
  }
}

void read_dims(WireInput& in, const WireField& field, const Limits& limits, Shape& dims) {
  for_each_varint(in, field, "TensorProto.dims", [&](uint64_t v) {
    if (dims.size() >= limits.max_dims)
      throw Error(ErrorCode::limit_exceeded,
                  limit_message("rank", std::nullopt, "max_dims", limits.max_dims),
                  {.source = in.name(), .offset = field.offset});
    const auto dim = static_cast<int64_t>(v);
    if (dim < 0)
      fail(ErrorCode::invalid_format, in, fmt::format("negative dimension {}", dim), field.offset);
    dims.push_back(dim);
  });
}

TensorFields scan_fields(WireInput& in, WireSpan span, const Limits& limits) {
  TensorFields t;
  MessageReader reader(in, span);
  WireField f;
  while (reader.next(f)) {
    switch (f.number) {
      case tf::dims: read_dims(in, f, limits, t.dims); break;
      case tf::data_type:
        expect_wire_type(in, f, WireType::varint, "TensorProto.data_type");
        t.data_type = f.value;
        break;
      case tf::segment: t.segmented = true; break;
      case tf::name:
        t.name = read_wire_string(in, f, limits.max_string_length, "TensorProto.name");
        break;
      case tf::raw_data:
        expect_wire_type(in, f, WireType::len, "TensorProto.raw_data");
        if (t.raw_data) fail(ErrorCode::invalid_format, in, "raw_data appears twice", f.offset);
        t.raw_data = f;
        break;
      case tf::external_data: read_external_entry(in, f, limits, t); break;
      case tf::data_location:
        expect_wire_type(in, f, WireType::varint, "TensorProto.data_location");
        t.data_location = f.value;
        break;
      default:
        if (is_typed_field(f.number) && std::find(t.typed_fields.begin(), t.typed_fields.end(),
                                                  f.number) == t.typed_fields.end())
          t.typed_fields.push_back(f.number);
    }
  }
  return t;
}

const OnnxDType& lookup_dtype(const WireInput& in, std::optional<uint64_t> id) {
  if (!id) fail(ErrorCode::invalid_format, in, "tensor has no data_type");
  for (const auto& d : kDTypes)
    if (d.id == *id) return d;
  if (*id == 0) fail(ErrorCode::invalid_format, in, "tensor data_type is UNDEFINED (0)");
  fail(ErrorCode::unsupported, in, fmt::format("unknown ONNX data_type {}", *id));
}

uint64_t tensor_bytes(const WireInput& in, const Shape& dims, DType dtype, const Limits& limits) {
  auto numel = checked_numel(dims);
  if (!numel) fail(ErrorCode::limit_exceeded, in, "tensor element count overflows 64 bits");
  auto nbytes = dtype_bytes_for(dtype, *numel);
  if (!nbytes && *numel % dtype_info(dtype).block_elements != 0)
    fail(
        ErrorCode::unsupported, in,
        fmt::format("{} elements of packed {} do not fill whole bytes", *numel, dtype_name(dtype)));
  if (!nbytes || *nbytes > limits.max_tensor_bytes)
    fail(ErrorCode::limit_exceeded, in,
         limit_message("tensor size", nbytes, "max_tensor_bytes", limits.max_tensor_bytes) +
             fmt::format(" ({} {} elements)", *numel, dtype_name(dtype)));
  return *nbytes;
}

// Decodes the typed field `d.typed_field` into little-endian bytes of `d.dtype`.
std::vector<std::byte> decode_typed(WireInput& in, WireSpan span, const OnnxDType& d,
                                    uint64_t nbytes) {
  const std::string_view what = typed_field_name(d.typed_field);
  const bool floating = d.typed_field == tf::float_data || d.typed_field == tf::double_data;
  const uint32_t width = d.typed_field == tf::float_data ? 4
                         : d.typed_field == tf::double_data
                             ? 8
                             : std::max(dtype_element_size(d.dtype), 1U);
  std::vector<std::byte> out;
  out.reserve(static_cast<size_t>(std::min(nbytes, span.length * 8)));
  MessageReader reader(in, span);
  WireField f;
  while (reader.next(f) && out.size() <= nbytes) {
    if (f.number != d.typed_field) continue;
    if (floating) {
      append_fixed(in, f, width, what, out);
      continue;
    }
    for_each_varint(in, f, what, [&](uint64_t v) {
      if (d.dtype == DType::boolean) v = v != 0;
      for (uint32_t i = 0; i < width; ++i) out.push_back(static_cast<std::byte>(v >> (8 * i)));
    });
  }
  if (out.size() != nbytes)
    fail(ErrorCode::invalid_format, in,
         fmt::format("{} holds {}{} values, but the shape needs {}", what,
                     out.size() > nbytes ? "more than " : "", out.size() / width, nbytes / width),
         span.offset);
  return out;
}

std::shared_ptr<ByteSource> locate_data(WireInput& in, WireSpan span, const TensorFields& t,
                                        const OnnxDType& d, uint64_t nbytes,
                                        ExternalFiles& external) {
  if (t.data_location == tf::location_external) {
    if (t.raw_data || !t.typed_fields.empty())
      fail(ErrorCode::invalid_format, in, "tensor is marked EXTERNAL but also holds inline data",
           span.offset);
    if (!t.external || t.external->location.empty())
      fail(ErrorCode::invalid_format, in, "EXTERNAL tensor has no external_data location",
           span.offset);
    return external.slice(*t.external, nbytes);
  }
  if (t.data_location != tf::location_default)
    fail(ErrorCode::invalid_format, in, fmt::format("unknown data_location {}", t.data_location),
         span.offset);
  if (t.typed_fields.size() + (t.raw_data ? 1 : 0) > 1)
    fail(ErrorCode::invalid_format, in, "tensor holds its data in more than one field",
         span.offset);
  if (t.raw_data) {
    if (t.raw_data->value != nbytes)
      fail(ErrorCode::invalid_format, in,
           fmt::format("raw_data holds {} bytes, but shape and dtype need {}", t.raw_data->value,
                       nbytes),
           t.raw_data->offset);
    return make_slice_source(in.source(), t.raw_data->offset, nbytes);
  }
  if (!t.typed_fields.empty()) {
    if (t.typed_fields.front() != d.typed_field)
      fail(ErrorCode::invalid_format, in,
           fmt::format("{} cannot hold a {} tensor", typed_field_name(t.typed_fields.front()),
                       dtype_name(d.dtype)),
           span.offset);
    return make_memory_source(decode_typed(in, span, d, nbytes), in.name());
  }
  if (nbytes != 0)
    fail(ErrorCode::invalid_format, in,
         fmt::format("tensor holds no data for its {} bytes", nbytes), span.offset);
  return make_memory_source(std::vector<std::byte>{}, in.name());
}

}  // namespace

DecodedTensor decode_tensor_proto(WireInput& in, WireSpan span, std::string_view entry_name,
                                  const Limits& limits, ExternalFiles& external) {
  std::string label(entry_name);
  try {
    TensorFields t = scan_fields(in, span, limits);
    if (label.empty()) label = t.name;
    DecodedTensor out;
    out.proto_name = t.name;
    if (t.data_type == kStringType) {
      out.skip_reason = "STRING tensors are not numeric tensors";
      return out;
    }
    const OnnxDType& d = lookup_dtype(in, t.data_type);
    if (t.segmented) fail(ErrorCode::unsupported, in, "segmented tensors", span.offset);
    const uint64_t nbytes = tensor_bytes(in, t.dims, d.dtype, limits);
    TensorEntry e;
    e.name = label;
    e.dtype = d.dtype;
    e.shape = std::move(t.dims);
    e.data = locate_data(in, span, t, d, nbytes, external);
    out.entry = std::move(e);
    return out;
  } catch (Error& e) {
    e.with_tensor(label);
    throw;
  }
}

}  // namespace ballast
