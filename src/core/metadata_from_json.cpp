// metadata_from_json (see metadata_json.hpp): typed metadata built from JSON text in one SAX
// pass, with no DOM in between. Linear in the text but for each object's duplicate-key check,
// which sorts the object's keys once it ends (n log n). An ordered DOM (nlohmann::ordered_json)
// looked every key up among the keys before it: quadratic, minutes for a million metadata keys.
// Array elements collect compactly while they share a kind (bools and numbers 16 bytes each,
// strings as strings) and become one value each only when the kinds mix.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/metadata_json.hpp"
#include "util/op_count.hpp"

namespace ballast {
namespace {

using Json = nlohmann::json;
using Scalar = std::variant<bool, int64_t, uint64_t, double>;

MetadataValue value_of(const Scalar& s) {
  return std::visit([](auto v) { return MetadataValue(v); }, s);
}

// A key given twice keeps its first place and takes its last value, as a JSON object reads.
// Equal keys are found by sorting the members' positions by key (every comparison counted).
void keep_last_value_of_each_key(MetadataValue::Members& members) {
  if (members.size() < 2) return;
  std::vector<size_t> by_key(members.size());
  std::iota(by_key.begin(), by_key.end(), size_t{0});
  std::stable_sort(by_key.begin(), by_key.end(), [&members](size_t a, size_t b) {
    count_op();
    return members[a].first < members[b].first;
  });
  std::vector<bool> dropped(members.size(), false);
  bool any_dropped = false;
  for (size_t first = 0, next = 1; first < by_key.size(); first = next++) {
    while (next < by_key.size() && members[by_key[next]].first == members[by_key[first]].first)
      dropped[by_key[next++]] = true;
    if (next - first > 1) {
      members[by_key[first]].second = std::move(members[by_key[next - 1]].second);
      any_dropped = true;
    }
  }
  if (!any_dropped) return;
  size_t kept = 0;
  for (size_t i = 0; i < members.size(); ++i) {
    if (dropped[i]) continue;
    if (kept != i) members[kept] = std::move(members[i]);
    ++kept;
  }
  members.erase(members.begin() + static_cast<std::ptrdiff_t>(kept), members.end());
}

// One open object or array.
struct Frame {
  bool is_object = false;
  MetadataValue::Members members;  // an object's, in the text's order
  std::string key;                 // the key whose value comes next
  // An array's elements: in `scalars` while each is a bool or a number, in `strings` while
  // each is a string, else in `values`.
  enum class Kind : uint8_t { empty, scalars, strings, values } kind = Kind::empty;
  std::vector<Scalar> scalars;
  std::vector<std::string> strings;
  std::vector<MetadataValue> values;

  void demote_to_values() {
    if (kind == Kind::scalars)
      for (const Scalar& s : scalars) values.push_back(value_of(s));
    if (kind == Kind::strings)
      for (std::string& s : strings) values.emplace_back(std::move(s));
    scalars = {};
    strings = {};
    kind = Kind::values;
  }

  // The array as compact as its elements allow: bools, integers (i64), numbers (f64), strings,
  // or one value per element with their common type (null when they differ).
  MetadataValue finish_array() {
    if (kind == Kind::strings) return MetadataValue::array_of_strings(std::move(strings));
    if (kind == Kind::scalars) {
      auto all = [this](auto is) { return std::all_of(scalars.begin(), scalars.end(), is); };
      if (all([](const Scalar& s) { return std::holds_alternative<bool>(s); })) {
        std::vector<uint8_t> bits;
        bits.reserve(scalars.size());
        for (const Scalar& s : scalars) bits.push_back(std::get<bool>(s) ? 1 : 0);
        return MetadataValue::array_of_bools(std::move(bits));
      }
      if (all([](const Scalar& s) { return std::holds_alternative<int64_t>(s); })) {
        std::vector<int64_t> ints;
        ints.reserve(scalars.size());
        for (const Scalar& s : scalars) ints.push_back(std::get<int64_t>(s));
        return MetadataValue::array_of(std::move(ints));
      }
      if (all([](const Scalar& s) { return !std::holds_alternative<bool>(s); })) {
        std::vector<double> numbers;
        numbers.reserve(scalars.size());
        for (const Scalar& s : scalars)
          numbers.push_back(std::visit([](auto v) { return static_cast<double>(v); }, s));
        return MetadataValue::array_of(std::move(numbers));
      }
      demote_to_values();
    }
    MetadataType element = values.empty() ? MetadataType::null : values.front().type();
    for (const MetadataValue& v : values)
      if (v.type() != element) element = MetadataType::null;
    return MetadataValue::array_of_values(std::move(values), element);
  }
};

// nlohmann's SAX interface. Nesting deeper than max_depth (the top level counting as one) or a
// syntax error stops the parse and leaves the result null.
class MetadataBuilder {
 public:
  explicit MetadataBuilder(uint32_t max_depth) : max_depth_(max_depth) {}

  bool null() { return place(MetadataValue()); }
  bool boolean(bool v) { return scalar(v); }
  bool number_integer(Json::number_integer_t v) { return scalar(static_cast<int64_t>(v)); }
  bool number_unsigned(Json::number_unsigned_t v) {
    return v <= static_cast<uint64_t>(INT64_MAX) ? scalar(static_cast<int64_t>(v))
                                                 : scalar(static_cast<uint64_t>(v));
  }
  bool number_float(Json::number_float_t v, const std::string&) { return scalar(v); }
  bool binary(Json::binary_t&) { return place(MetadataValue()); }  // not in JSON text

  bool string(std::string& v) {
    if (Frame* array = open_array();
        array && (array->kind == Frame::Kind::empty || array->kind == Frame::Kind::strings)) {
      count_op();
      array->kind = Frame::Kind::strings;
      array->strings.push_back(std::move(v));
      return true;
    }
    return place(MetadataValue(std::move(v)));
  }

  bool start_object(std::size_t) { return open(true); }
  bool start_array(std::size_t) { return open(false); }
  bool key(std::string& name) {
    stack_.back().key = std::move(name);
    return true;
  }

  bool end_object() {
    Frame frame = std::move(stack_.back());
    stack_.pop_back();
    keep_last_value_of_each_key(frame.members);
    return place(MetadataValue::object(std::move(frame.members)));
  }

  bool end_array() {
    Frame frame = std::move(stack_.back());
    stack_.pop_back();
    return place(frame.finish_array());
  }

  bool parse_error(std::size_t, const std::string&, const Json::exception&) {
    failed_ = true;
    return false;
  }

  MetadataValue result() { return failed_ ? MetadataValue() : std::move(root_); }

 private:
  Frame* open_array() {
    return stack_.empty() || stack_.back().is_object ? nullptr : &stack_.back();
  }

  bool open(bool is_object) {
    if (stack_.size() >= max_depth_) {
      failed_ = true;
      return false;
    }
    stack_.emplace_back().is_object = is_object;
    return true;
  }

  bool scalar(Scalar v) {
    if (Frame* array = open_array();
        array && (array->kind == Frame::Kind::empty || array->kind == Frame::Kind::scalars)) {
      count_op();
      array->kind = Frame::Kind::scalars;
      array->scalars.push_back(v);
      return true;
    }
    return place(value_of(v));
  }

  // A finished value: a member of the open object, an element of the open array, or the root.
  bool place(MetadataValue v) {
    count_op();
    if (stack_.empty()) {
      root_ = std::move(v);
    } else if (Frame& top = stack_.back(); top.is_object) {
      top.members.emplace_back(std::move(top.key), std::move(v));
    } else {
      if (top.kind != Frame::Kind::values) top.demote_to_values();
      top.values.push_back(std::move(v));
    }
    return true;
  }

  uint32_t max_depth_;
  std::vector<Frame> stack_;
  MetadataValue root_;
  bool failed_ = false;
};

}  // namespace

MetadataValue metadata_from_json(std::string_view text, uint32_t max_depth) {
  MetadataBuilder builder(max_depth);
  Json::sax_parse(text.begin(), text.end(), &builder);
  return builder.result();
}

}  // namespace ballast
