// Validation of one .npy header (layout in npy_header.hpp).
#include "formats/numpy/npy_header.hpp"

#include <array>
#include <bit>
#include <cstring>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "formats/numpy/py_literal.hpp"
#include "util/checked.hpp"
#include "util/error_text.hpp"

namespace ballast {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr uint64_t kPreambleV1 = 10;  // magic, version, u16 length
constexpr uint64_t kPreambleV2 = 12;  // magic, version, u32 length

struct TypeCode {
  char kind;
  uint32_t size;
  DType dtype;
};
constexpr std::array kTypes = {
    TypeCode{'b', 1, DType::boolean}, TypeCode{'i', 1, DType::i8},    TypeCode{'i', 2, DType::i16},
    TypeCode{'i', 4, DType::i32},     TypeCode{'i', 8, DType::i64},   TypeCode{'u', 1, DType::u8},
    TypeCode{'u', 2, DType::u16},     TypeCode{'u', 4, DType::u32},   TypeCode{'u', 8, DType::u64},
    TypeCode{'f', 2, DType::f16},     TypeCode{'f', 4, DType::f32},   TypeCode{'f', 8, DType::f64},
    TypeCode{'c', 8, DType::c64},     TypeCode{'c', 16, DType::c128},
};

class HeaderReader {
 public:
  HeaderReader(const ByteSource& source, const Limits& limits) : source_(source), limits_(limits) {}

  NpyHeader read() {
    const uint64_t length = read_preamble();
    const PyLiteral dict = parse_dict(length);
    NpyHeader h;
    h.data_offset = preamble_ + length;
    read_fields(dict, h);
    if (h.unsupported_reason.empty()) check_data(h);
    return h;
  }

 private:
  [[noreturn]] void fail(ErrorCode code, std::string message, uint64_t offset) const {
    throw Error(code, std::move(message), {.source = source_.name(), .offset = offset});
  }

  // Magic, version and header length; returns the length.
  uint64_t read_preamble() {
    const uint64_t size = source_.size();
    if (size < kPreambleV1)
      fail(ErrorCode::invalid_format,
           fmt::format("{} bytes are too few for a .npy preamble ({} bytes)", size, kPreambleV1),
           0);
    std::array<std::byte, kPreambleV2> raw{};
    source_.read_at(0, std::span(raw).first(std::min<uint64_t>(size, kPreambleV2)));
    if (!has_npy_magic(raw))
      fail(ErrorCode::invalid_format, "missing the .npy magic \\x93NUMPY", 0);
    major_ = static_cast<uint8_t>(raw[6]);
    const auto minor = static_cast<uint8_t>(raw[7]);
    if (major_ < 1 || major_ > 3 || minor != 0)
      fail(ErrorCode::unsupported,
           fmt::format(".npy format version {}.{} is not supported (1.0, 2.0, 3.0 are)", major_,
                       minor),
           6);
    auto byte = [&](size_t i) { return static_cast<uint64_t>(raw[i]); };
    uint64_t length = 0;
    if (major_ == 1) {
      preamble_ = kPreambleV1;
      length = byte(8) | byte(9) << 8;
    } else {
      if (size < kPreambleV2)
        fail(ErrorCode::invalid_format, "file ends inside the .npy header length", 8);
      preamble_ = kPreambleV2;
      length = byte(8) | byte(9) << 8 | byte(10) << 16 | byte(11) << 24;
    }
    if (length > limits_.max_header_bytes)
      fail(ErrorCode::limit_exceeded,
           limit_message("header length", length, "max_header_bytes", limits_.max_header_bytes), 8);
    if (length > size - preamble_)
      fail(ErrorCode::invalid_format, truncated_message(preamble_ + length, size, "the header"), 8);
    return length;
  }

  PyLiteral parse_dict(uint64_t length) const {
    std::vector<std::byte> raw = source_.read(preamble_, length);
    std::string_view text(reinterpret_cast<const char*>(raw.data()), raw.size());
    PyLiteral dict;
    try {
      dict = parse_py_literal(text, limits_.max_json_depth);
    } catch (const PyLiteralError& e) {
      fail(e.too_deep ? ErrorCode::limit_exceeded : ErrorCode::invalid_format,
           e.too_deep ? limit_message(".npy header dict nesting depth", std::nullopt,
                                      "max_json_depth", limits_.max_json_depth)
                      : fmt::format("malformed .npy header dict: {}", e.message),
           preamble_ + e.position);
    }
    if (dict.kind != PyLiteral::Kind::dict)
      fail(ErrorCode::invalid_format, "the .npy header is not a dict literal", preamble_);
    return dict;
  }

  void read_fields(const PyLiteral& dict, NpyHeader& h) const {
    const PyLiteral* descr = nullptr;
    const PyLiteral* fortran = nullptr;
    const PyLiteral* shape = nullptr;
    for (size_t i = 0; i < dict.keys.size(); ++i) {
      const std::string& key = dict.keys[i];
      const PyLiteral& value = dict.items[i];
      if (key == "descr")
        descr = &value;
      else if (key == "fortran_order")
        fortran = &value;
      else if (key == "shape")
        shape = &value;
      else
        fail(ErrorCode::invalid_format, fmt::format("unexpected .npy header key '{}'", key),
             preamble_);
    }
    if (!descr || !fortran || !shape)
      fail(ErrorCode::invalid_format,
           "the .npy header must hold exactly 'descr', 'fortran_order' and 'shape'", preamble_);
    if (fortran->kind != PyLiteral::Kind::boolean)
      fail(ErrorCode::invalid_format, "'fortran_order' is not True or False", preamble_);
    h.fortran_order = fortran->boolean;
    read_shape(*shape, h);
    read_descr(*descr, h);
  }

  void read_shape(const PyLiteral& shape, NpyHeader& h) const {
    if (shape.kind != PyLiteral::Kind::tuple)
      fail(ErrorCode::invalid_format, "'shape' is not a tuple", preamble_);
    if (shape.items.size() > limits_.max_dims)
      fail(ErrorCode::limit_exceeded,
           limit_message("rank", shape.items.size(), "max_dims", limits_.max_dims), preamble_);
    for (const auto& d : shape.items) {
      if (d.kind != PyLiteral::Kind::integer || d.integer < 0)
        fail(ErrorCode::invalid_format, "'shape' holds something other than a non-negative int",
             preamble_);
      h.shape.push_back(d.integer);
    }
  }

  void read_descr(const PyLiteral& descr, NpyHeader& h) const {
    if (descr.kind == PyLiteral::Kind::list || descr.kind == PyLiteral::Kind::dict) {
      h.descr = "structured";
      h.unsupported_reason = "a structured (record) dtype is not a tensor dtype";
      return;
    }
    if (descr.kind != PyLiteral::Kind::string)
      fail(ErrorCode::invalid_format, "'descr' is not a string", preamble_);
    h.descr = descr.text;
    std::string_view d = h.descr;
    char order = '|';
    if (!d.empty() && std::string_view("<>|=").find(d.front()) != std::string_view::npos) {
      order = d.front();
      d.remove_prefix(1);
    }
    if (d.empty())
      fail(ErrorCode::invalid_format, fmt::format("empty descr '{}'", h.descr), preamble_);
    const char kind = d.front();
    if (kind == 'O')
      fail(ErrorCode::unsupported,
           fmt::format("descr '{}' is an object array, stored as a pickle: object arrays and "
                       "pickles are refused (ballast never unpickles)",
                       h.descr),
           preamble_);
    uint32_t size = 0;
    const bool sized = parse_size(d.substr(1), size);
    if (sized)
      for (const auto& t : kTypes)
        if (t.kind == kind && t.size == size) {
          h.dtype = t.dtype;
          h.byte_order = byte_order(order, size);
          return;
        }
    if (std::string_view("USaVMm").find(kind) != std::string_view::npos ||
        ((kind == 'f' || kind == 'c') && sized)) {
      h.unsupported_reason = fmt::format("descr '{}' is not a tensor dtype", h.descr);
      return;
    }
    fail(ErrorCode::invalid_format, fmt::format("unknown descr '{}'", h.descr), preamble_);
  }

  static bool parse_size(std::string_view digits, uint32_t& size) {
    if (digits.empty() || digits.size() > 4) return false;
    for (char c : digits) {
      if (c < '0' || c > '9') return false;
      size = size * 10 + static_cast<uint32_t>(c - '0');
    }
    return true;
  }

  static ByteOrder byte_order(char order, uint32_t size) {
    if (size == 1) return ByteOrder::little;
    if (order == '>') return ByteOrder::big;
    if (order == '<') return ByteOrder::little;
    return std::endian::native == std::endian::big ? ByteOrder::big : ByteOrder::little;
  }

  // The data must fill the rest of the source exactly.
  void check_data(NpyHeader& h) const {
    auto numel = checked_numel(h.shape);
    auto nbytes = numel ? dtype_bytes_for(h.dtype, *numel) : std::nullopt;
    if (!nbytes)
      fail(ErrorCode::invalid_format, "the shape's element or byte count overflows 64 bits",
           preamble_);
    if (*nbytes > limits_.max_tensor_bytes)
      fail(ErrorCode::limit_exceeded,
           limit_message("tensor size in bytes", *nbytes, "max_tensor_bytes",
                         limits_.max_tensor_bytes),
           h.data_offset);
    const uint64_t present = source_.size() - h.data_offset;
    if (present != *nbytes)
      fail(ErrorCode::invalid_format,
           fmt::format("the file holds {} data bytes after its header but shape and dtype need {}",
                       present, *nbytes),
           h.data_offset);
    h.nbytes = *nbytes;
  }

  const ByteSource& source_;
  const Limits& limits_;
  uint8_t major_ = 0;
  uint64_t preamble_ = kPreambleV1;
};

}  // namespace

bool has_npy_magic(std::span<const std::byte> head) {
  return head.size() >= kMagic.size() &&
         std::memcmp(head.data(), kMagic.data(), kMagic.size()) == 0;
}

NpyHeader read_npy_header(const ByteSource& source, const Limits& limits) {
  return HeaderReader(source, limits).read();
}

std::vector<int64_t> fortran_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size());
  uint64_t step = 1;  // partial products of a shape whose element count fits in 64 bits
  for (size_t i = 0; i < shape.size(); ++i) {
    strides[i] = static_cast<int64_t>(step);
    step *= static_cast<uint64_t>(shape[i]);
  }
  return strides;
}

}  // namespace ballast
