// MetadataValue: a checkpoint's format metadata as typed values (GGUF key/value pairs with
// their GGUF types, safetensors `__metadata__`, ONNX metadata_props, PyTorch non-tensor
// leaves). JSON text is one rendering of it (to_json), the one WeightMetadata::extra holds.
//
// Arrays of numbers or bools are kept as one compact buffer of their element type (a GGUF
// array of a million u8 costs a million bytes), arrays of strings as strings; only arrays
// whose elements are themselves arrays or objects, or differ in type, hold a MetadataValue
// per element.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace ballast {

enum class MetadataType : uint8_t {
  null,
  boolean,
  u8,
  i8,
  u16,
  i16,
  u32,
  i32,
  u64,
  i64,
  f32,
  f64,
  string,
  array,
  object,
};

// "u32", "string", "array"...
std::string_view metadata_type_name(MetadataType type);

class MetadataValue {
 public:
  using Members = std::vector<std::pair<std::string, MetadataValue>>;  // in the file's order

  MetadataValue() = default;  // null
  explicit MetadataValue(bool value);
  explicit MetadataValue(uint8_t value);
  explicit MetadataValue(int8_t value);
  explicit MetadataValue(uint16_t value);
  explicit MetadataValue(int16_t value);
  explicit MetadataValue(uint32_t value);
  explicit MetadataValue(int32_t value);
  explicit MetadataValue(uint64_t value);
  explicit MetadataValue(int64_t value);
  explicit MetadataValue(float value);
  explicit MetadataValue(double value);
  explicit MetadataValue(std::string value);
  explicit MetadataValue(const char* value) : MetadataValue(std::string(value)) {}

  // An array of one element type, kept compactly (T: uint8_t ... int64_t, float, double).
  template <typename T>
  static MetadataValue array_of(std::vector<T> elements);
  static MetadataValue array_of_bools(std::vector<uint8_t> zeros_and_ones);
  static MetadataValue array_of_strings(std::vector<std::string> elements);
  // An array of arbitrary values; `element` is their common type, or null when they differ.
  static MetadataValue array_of_values(std::vector<MetadataValue> elements, MetadataType element);
  static MetadataValue object(Members members);

  MetadataType type() const { return type_; }
  bool is_integer() const;  // u8 ... i64
  bool is_number() const;   // an integer, f32 or f64

  // Scalars. Each throws Error invalid_argument when the value is not of that kind; as_int and
  // as_uint also when the integer does not fit.
  bool as_bool() const;
  int64_t as_int() const;
  uint64_t as_uint() const;
  double as_double() const;  // any number
  const std::string& as_string() const;

  // Arrays and objects: how many elements or members (0 for a scalar).
  size_t size() const;
  // An array's element type: what every element is, or null when they differ.
  MetadataType element_type() const;
  // An array's element `i`, as a value (throws invalid_argument when out of range).
  MetadataValue at(size_t i) const;
  // The elements of an array of T (uint8_t for u8 ... double for f64; bool arrays are uint8_t
  // 0/1): a view into the compact buffer. Throws invalid_argument for another element type.
  template <typename T>
  std::span<const T> elements() const;
  const std::vector<std::string>& strings() const;   // an array of strings
  const std::vector<MetadataValue>& values() const;  // an array of arrays, objects, or mixed

  // An object's members in order, and the one named `key` (null when absent).
  const Members& members() const;
  const MetadataValue* find(std::string_view key) const;

  friend bool operator==(const MetadataValue&, const MetadataValue&) = default;

 private:
  template <typename T>
  using Buffer = std::vector<T>;
  using Storage =
      std::variant<std::monostate, bool, int64_t, uint64_t, double, std::string, Buffer<uint8_t>,
                   Buffer<int8_t>, Buffer<uint16_t>, Buffer<int16_t>, Buffer<uint32_t>,
                   Buffer<int32_t>, Buffer<uint64_t>, Buffer<int64_t>, Buffer<float>,
                   Buffer<double>, std::vector<std::string>, std::vector<MetadataValue>, Members>;

  MetadataValue(MetadataType type, MetadataType element, Storage storage);
  template <typename T>
  static MetadataType type_of();

  MetadataType type_ = MetadataType::null;
  MetadataType element_ = MetadataType::null;  // arrays only
  Storage storage_;
};

// The value as compact JSON text: integers exact, floats as the shortest text that reads back
// as the same double (f32 widened; NaN and infinities as null), bool arrays as true/false,
// members in order, bytes that are not UTF-8 as U+FFFD.
std::string to_json(const MetadataValue& value);

}  // namespace ballast
