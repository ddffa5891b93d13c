// MetadataValue <-> JSON text (see metadata_json.hpp and ballast/metadata_value.hpp).
#include "core/metadata_json.hpp"

#include <algorithm>
#include <iterator>
#include <type_traits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "util/bounded_json.hpp"
#include "util/json_text.hpp"

namespace ballast {
namespace {

using Json = nlohmann::ordered_json;

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

MetadataValue from_json(const Json& j);

// A JSON array: compact when every element is a bool, every one an integer, every one a
// number or every one a string; else one value per element.
MetadataValue array_from_json(const Json& j) {
  auto all = [&j](auto predicate) {
    return !j.empty() && std::all_of(j.begin(), j.end(), predicate);
  };
  if (all([](const Json& e) { return e.is_boolean(); })) {
    std::vector<uint8_t> bits;
    for (const auto& e : j) bits.push_back(e.get<bool>() ? 1 : 0);
    return MetadataValue::array_of_bools(std::move(bits));
  }
  if (all([](const Json& e) {
        return e.is_number_integer() && (!e.is_number_unsigned() || e.get<uint64_t>() <= INT64_MAX);
      })) {
    std::vector<int64_t> ints;
    for (const auto& e : j) ints.push_back(e.get<int64_t>());
    return MetadataValue::array_of(std::move(ints));
  }
  if (all([](const Json& e) { return e.is_number(); })) {
    std::vector<double> numbers;
    for (const auto& e : j) numbers.push_back(e.get<double>());
    return MetadataValue::array_of(std::move(numbers));
  }
  if (all([](const Json& e) { return e.is_string(); })) {
    std::vector<std::string> strings;
    for (const auto& e : j) strings.push_back(e.get<std::string>());
    return MetadataValue::array_of_strings(std::move(strings));
  }
  std::vector<MetadataValue> values;
  for (const auto& e : j) values.push_back(from_json(e));
  MetadataType element = values.empty() ? MetadataType::null : values.front().type();
  for (const auto& v : values)
    if (v.type() != element) element = MetadataType::null;
  return MetadataValue::array_of_values(std::move(values), element);
}

MetadataValue from_json(const Json& j) {
  switch (j.type()) {
    case Json::value_t::boolean: return MetadataValue(j.get<bool>());
    case Json::value_t::number_integer: return MetadataValue(j.get<int64_t>());
    case Json::value_t::number_unsigned: {
      const auto u = j.get<uint64_t>();
      return u <= INT64_MAX ? MetadataValue(static_cast<int64_t>(u)) : MetadataValue(u);
    }
    case Json::value_t::number_float: return MetadataValue(j.get<double>());
    case Json::value_t::string: return MetadataValue(j.get<std::string>());
    case Json::value_t::array: return array_from_json(j);
    case Json::value_t::object: {
      MetadataValue::Members members;
      for (const auto& [key, value] : j.items()) members.emplace_back(key, from_json(value));
      return MetadataValue::object(std::move(members));
    }
    default: return {};
  }
}

}  // namespace

std::string to_json(const MetadataValue& value) {
  std::string out;
  write(out, value);
  return out;
}

MetadataValue metadata_from_json(std::string_view text, uint32_t max_depth) {
  if (check_json(text, max_depth).kind != JsonProblem::Kind::none) return {};
  return from_json(Json::parse(text));
}

}  // namespace ballast
