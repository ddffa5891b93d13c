// MetadataValue to JSON text, to_json (ballast/metadata_value.hpp); the other way is
// metadata_from_json.cpp.
#include "core/metadata_json.hpp"

#include <iterator>
#include <type_traits>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "util/json_text.hpp"

namespace ballast {
namespace {

// A double as nlohmann::json writes it (shortest round trip, "1.0" for whole numbers, null
// for NaN and infinities), so the text reads back as the same number.
void write_double(std::string& out, double v) { out += nlohmann::json(v).dump(); }

void write_string(std::string& out, const std::string& s) {
  out += lossy_json_text(nlohmann::json(s));
}

template <typename T>
void write_elements(std::string& out, std::span<const T> elements) {
  for (size_t i = 0; i < elements.size(); ++i) {
    if (i != 0) out += ',';
    if constexpr (std::is_floating_point_v<T>)
      write_double(out, static_cast<double>(elements[i]));
    else
      fmt::format_to(std::back_inserter(out), "{}", elements[i]);
  }
}

void write(std::string& out, const MetadataValue& v);

void write_array(std::string& out, const MetadataValue& v) {
  out += '[';
  switch (v.element_type()) {
    case MetadataType::boolean: {
      const auto bits = v.elements<uint8_t>();
      for (size_t i = 0; i < bits.size(); ++i) {
        if (i != 0) out += ',';
        out += bits[i] ? "true" : "false";
      }
      break;
    }
    case MetadataType::u8: write_elements(out, v.elements<uint8_t>()); break;
    case MetadataType::i8: write_elements(out, v.elements<int8_t>()); break;
    case MetadataType::u16: write_elements(out, v.elements<uint16_t>()); break;
    case MetadataType::i16: write_elements(out, v.elements<int16_t>()); break;
    case MetadataType::u32: write_elements(out, v.elements<uint32_t>()); break;
    case MetadataType::i32: write_elements(out, v.elements<int32_t>()); break;
    case MetadataType::u64: write_elements(out, v.elements<uint64_t>()); break;
    case MetadataType::i64: write_elements(out, v.elements<int64_t>()); break;
    case MetadataType::f32: write_elements(out, v.elements<float>()); break;
    case MetadataType::f64: write_elements(out, v.elements<double>()); break;
    case MetadataType::string: {
      const auto& strings = v.strings();
      for (size_t i = 0; i < strings.size(); ++i) {
        if (i != 0) out += ',';
        write_string(out, strings[i]);
      }
      break;
    }
    default: {
      const auto& values = v.values();
      for (size_t i = 0; i < values.size(); ++i) {
        if (i != 0) out += ',';
        write(out, values[i]);
      }
    }
  }
  out += ']';
}

void write(std::string& out, const MetadataValue& v) {
  switch (v.type()) {
    case MetadataType::null: out += "null"; return;
    case MetadataType::boolean: out += v.as_bool() ? "true" : "false"; return;
    case MetadataType::u8:
    case MetadataType::u16:
    case MetadataType::u32:
    case MetadataType::u64: fmt::format_to(std::back_inserter(out), "{}", v.as_uint()); return;
    case MetadataType::i8:
    case MetadataType::i16:
    case MetadataType::i32:
    case MetadataType::i64: fmt::format_to(std::back_inserter(out), "{}", v.as_int()); return;
    case MetadataType::f32:
    case MetadataType::f64: write_double(out, v.as_double()); return;
    case MetadataType::string: write_string(out, v.as_string()); return;
    case MetadataType::array: write_array(out, v); return;
    case MetadataType::object: {
      out += '{';
      bool first = true;
      for (const auto& [key, value] : v.members()) {
        if (!std::exchange(first, false)) out += ',';
        write_string(out, key);
        out += ':';
        write(out, value);
      }
      out += '}';
      return;
    }
  }
}

}  // namespace

std::string to_json(const MetadataValue& value) {
  std::string out;
  write(out, value);
  return out;
}

}  // namespace ballast
