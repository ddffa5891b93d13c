// MetadataValue: construction and typed access (the JSON rendering is in metadata_json.cpp).
#include "ballast/metadata_value.hpp"

#include <limits>
#include <type_traits>

#include <fmt/format.h>

#include "ballast/error.hpp"

namespace ballast {
namespace {

[[noreturn]] void wrong_kind(MetadataType actual, std::string_view wanted) {
  throw Error(ErrorCode::invalid_argument,
              fmt::format("metadata value is {}, not {}", metadata_type_name(actual), wanted));
}

template <typename S>
constexpr bool is_vector = false;
template <typename T>
constexpr bool is_vector<std::vector<T>> = true;

}  // namespace

std::string_view metadata_type_name(MetadataType type) {
  switch (type) {
    case MetadataType::null: return "null";
    case MetadataType::boolean: return "bool";
    case MetadataType::u8: return "u8";
    case MetadataType::i8: return "i8";
    case MetadataType::u16: return "u16";
    case MetadataType::i16: return "i16";
    case MetadataType::u32: return "u32";
    case MetadataType::i32: return "i32";
    case MetadataType::u64: return "u64";
    case MetadataType::i64: return "i64";
    case MetadataType::f32: return "f32";
    case MetadataType::f64: return "f64";
    case MetadataType::string: return "string";
    case MetadataType::array: return "array";
    case MetadataType::object: return "object";
  }
  return "unknown";
}

template <typename T>
MetadataType MetadataValue::type_of() {
  if constexpr (std::is_same_v<T, uint8_t>) return MetadataType::u8;
  if constexpr (std::is_same_v<T, int8_t>) return MetadataType::i8;
  if constexpr (std::is_same_v<T, uint16_t>) return MetadataType::u16;
  if constexpr (std::is_same_v<T, int16_t>) return MetadataType::i16;
  if constexpr (std::is_same_v<T, uint32_t>) return MetadataType::u32;
  if constexpr (std::is_same_v<T, int32_t>) return MetadataType::i32;
  if constexpr (std::is_same_v<T, uint64_t>) return MetadataType::u64;
  if constexpr (std::is_same_v<T, int64_t>) return MetadataType::i64;
  if constexpr (std::is_same_v<T, float>) return MetadataType::f32;
  if constexpr (std::is_same_v<T, double>) return MetadataType::f64;
}

MetadataValue::MetadataValue(MetadataType type, MetadataType element, Storage storage)
    : type_(type), element_(element), storage_(std::move(storage)) {}

MetadataValue::MetadataValue(bool value) : type_(MetadataType::boolean), storage_(value) {}
MetadataValue::MetadataValue(uint8_t value)
    : type_(MetadataType::u8), storage_(static_cast<uint64_t>(value)) {}
MetadataValue::MetadataValue(int8_t value)
    : type_(MetadataType::i8), storage_(static_cast<int64_t>(value)) {}
MetadataValue::MetadataValue(uint16_t value)
    : type_(MetadataType::u16), storage_(static_cast<uint64_t>(value)) {}
MetadataValue::MetadataValue(int16_t value)
    : type_(MetadataType::i16), storage_(static_cast<int64_t>(value)) {}
MetadataValue::MetadataValue(uint32_t value)
    : type_(MetadataType::u32), storage_(static_cast<uint64_t>(value)) {}
MetadataValue::MetadataValue(int32_t value)
    : type_(MetadataType::i32), storage_(static_cast<int64_t>(value)) {}
MetadataValue::MetadataValue(uint64_t value) : type_(MetadataType::u64), storage_(value) {}
MetadataValue::MetadataValue(int64_t value) : type_(MetadataType::i64), storage_(value) {}
MetadataValue::MetadataValue(float value)
    : type_(MetadataType::f32), storage_(static_cast<double>(value)) {}
MetadataValue::MetadataValue(double value) : type_(MetadataType::f64), storage_(value) {}
MetadataValue::MetadataValue(std::string value)
    : type_(MetadataType::string), storage_(std::move(value)) {}

template <typename T>
MetadataValue MetadataValue::array_of(std::vector<T> elements) {
  return {MetadataType::array, type_of<T>(), std::move(elements)};
}

MetadataValue MetadataValue::array_of_bools(std::vector<uint8_t> zeros_and_ones) {
  return {MetadataType::array, MetadataType::boolean, std::move(zeros_and_ones)};
}

MetadataValue MetadataValue::array_of_strings(std::vector<std::string> elements) {
  return {MetadataType::array, MetadataType::string, std::move(elements)};
}

MetadataValue MetadataValue::array_of_values(std::vector<MetadataValue> elements,
                                             MetadataType element) {
  return {MetadataType::array, element, std::move(elements)};
}

MetadataValue MetadataValue::object(Members members) {
  return {MetadataType::object, MetadataType::null, std::move(members)};
}

bool MetadataValue::is_integer() const {
  return type_ >= MetadataType::u8 && type_ <= MetadataType::i64;
}

bool MetadataValue::is_number() const {
  return type_ >= MetadataType::u8 && type_ <= MetadataType::f64;
}

bool MetadataValue::as_bool() const {
  if (type_ != MetadataType::boolean) wrong_kind(type_, "bool");
  return std::get<bool>(storage_);
}

int64_t MetadataValue::as_int() const {
  if (!is_integer()) wrong_kind(type_, "an integer");
  if (const auto* u = std::get_if<uint64_t>(&storage_)) {
    if (*u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("metadata value {} does not fit in int64", *u));
    return static_cast<int64_t>(*u);
  }
  return std::get<int64_t>(storage_);
}

uint64_t MetadataValue::as_uint() const {
  if (!is_integer()) wrong_kind(type_, "an integer");
  if (const auto* i = std::get_if<int64_t>(&storage_)) {
    if (*i < 0)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("metadata value {} does not fit in uint64", *i));
    return static_cast<uint64_t>(*i);
  }
  return std::get<uint64_t>(storage_);
}

double MetadataValue::as_double() const {
  if (!is_number()) wrong_kind(type_, "a number");
  if (const auto* d = std::get_if<double>(&storage_)) return *d;
  if (const auto* u = std::get_if<uint64_t>(&storage_)) return static_cast<double>(*u);
  return static_cast<double>(std::get<int64_t>(storage_));
}

const std::string& MetadataValue::as_string() const {
  if (type_ != MetadataType::string) wrong_kind(type_, "a string");
  return std::get<std::string>(storage_);
}

size_t MetadataValue::size() const {
  if (type_ == MetadataType::object) return members().size();
  if (type_ != MetadataType::array) return 0;
  return std::visit(
      [](const auto& s) -> size_t {
        if constexpr (is_vector<std::decay_t<decltype(s)>>)
          return s.size();
        else
          return 0;
      },
      storage_);
}

MetadataType MetadataValue::element_type() const {
  if (type_ != MetadataType::array) wrong_kind(type_, "an array");
  return element_;
}

MetadataValue MetadataValue::at(size_t i) const {
  if (type_ != MetadataType::array) wrong_kind(type_, "an array");
  if (i >= size())
    throw Error(ErrorCode::invalid_argument,
                fmt::format("metadata array index {} is out of range (size {})", i, size()));
  if (element_ == MetadataType::boolean)
    return MetadataValue(std::get<Buffer<uint8_t>>(storage_)[i] != 0);
  return std::visit(
      [i](const auto& s) -> MetadataValue {
        using S = std::decay_t<decltype(s)>;
        if constexpr (is_vector<S> && !std::is_same_v<S, Members>)
          return MetadataValue(s[i]);
        else
          return {};  // not an array's storage (size() was 0)
      },
      storage_);
}

template <typename T>
std::span<const T> MetadataValue::elements() const {
  const auto* buffer = type_ == MetadataType::array ? std::get_if<Buffer<T>>(&storage_) : nullptr;
  if (!buffer) wrong_kind(type_ == MetadataType::array ? element_ : type_, "an array of that type");
  return *buffer;
}

const std::vector<std::string>& MetadataValue::strings() const {
  const auto* buffer = std::get_if<std::vector<std::string>>(&storage_);
  if (!buffer) wrong_kind(type_, "an array of strings");
  return *buffer;
}

const std::vector<MetadataValue>& MetadataValue::values() const {
  const auto* buffer = std::get_if<std::vector<MetadataValue>>(&storage_);
  if (!buffer) wrong_kind(type_, "an array of values");
  return *buffer;
}

const MetadataValue::Members& MetadataValue::members() const {
  const auto* m = std::get_if<Members>(&storage_);
  if (!m) wrong_kind(type_, "an object");
  return *m;
}

const MetadataValue* MetadataValue::find(std::string_view key) const {
  for (const auto& [name, value] : members())
    if (name == key) return &value;
  return nullptr;
}

#define BALLAST_METADATA_ARRAY(T)                                    \
  template MetadataValue MetadataValue::array_of<T>(std::vector<T>); \
  template std::span<const T> MetadataValue::elements<T>() const;
BALLAST_METADATA_ARRAY(uint8_t)
BALLAST_METADATA_ARRAY(int8_t)
BALLAST_METADATA_ARRAY(uint16_t)
BALLAST_METADATA_ARRAY(int16_t)
BALLAST_METADATA_ARRAY(uint32_t)
BALLAST_METADATA_ARRAY(int32_t)
BALLAST_METADATA_ARRAY(uint64_t)
BALLAST_METADATA_ARRAY(int64_t)
BALLAST_METADATA_ARRAY(float)
BALLAST_METADATA_ARRAY(double)
#undef BALLAST_METADATA_ARRAY

}  // namespace ballast
