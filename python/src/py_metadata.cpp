// MetadataValue to Python values (see py_metadata.hpp).
#include "py_metadata.hpp"

#include <span>

#include "py_text.hpp"

namespace ballast::python {
namespace nb = nanobind;

namespace {

template <typename T>
nb::list number_list(std::span<const T> elements) {
  nb::list out;
  for (T e : elements) out.append(e);
  return out;
}

nb::object array_value(const MetadataValue& v) {
  switch (v.element_type()) {
    case MetadataType::u8: {
      const auto bytes = v.elements<uint8_t>();
      return nb::bytes(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    }
    case MetadataType::boolean: {
      nb::list out;
      for (uint8_t b : v.elements<uint8_t>()) out.append(nb::bool_(b != 0));
      return out;
    }
    case MetadataType::i8: return number_list(v.elements<int8_t>());
    case MetadataType::u16: return number_list(v.elements<uint16_t>());
    case MetadataType::i16: return number_list(v.elements<int16_t>());
    case MetadataType::u32: return number_list(v.elements<uint32_t>());
    case MetadataType::i32: return number_list(v.elements<int32_t>());
    case MetadataType::u64: return number_list(v.elements<uint64_t>());
    case MetadataType::i64: return number_list(v.elements<int64_t>());
    case MetadataType::f32: return number_list(v.elements<float>());
    case MetadataType::f64: return number_list(v.elements<double>());
    case MetadataType::string: {
      nb::list out;
      for (const auto& s : v.strings()) out.append(decoded(s));
      return out;
    }
    default: {
      nb::list out;
      for (const auto& e : v.values()) out.append(native_value(e));
      return out;
    }
  }
}

}  // namespace

nb::object native_value(const MetadataValue& v) {
  switch (v.type()) {
    case MetadataType::null: return nb::none();
    case MetadataType::boolean: return nb::bool_(v.as_bool());
    case MetadataType::u8:
    case MetadataType::u16:
    case MetadataType::u32:
    case MetadataType::u64: return nb::int_(v.as_uint());
    case MetadataType::i8:
    case MetadataType::i16:
    case MetadataType::i32:
    case MetadataType::i64: return nb::int_(v.as_int());
    case MetadataType::f32:
    case MetadataType::f64: return nb::float_(v.as_double());
    case MetadataType::string: return decoded(v.as_string());
    case MetadataType::array: return array_value(v);
    case MetadataType::object: {
      nb::dict out;
      for (const auto& [key, value] : v.members()) out[decoded(key)] = native_value(value);
      return out;
    }
  }
  return nb::none();
}

}  // namespace ballast::python
