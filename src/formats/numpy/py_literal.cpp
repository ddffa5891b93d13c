// Recursive-descent parser for the .npy header's Python literal subset (see py_literal.hpp).
#include "formats/numpy/py_literal.hpp"

#include <cctype>
#include <unordered_set>

#include <fmt/format.h>

#include "util/op_count.hpp"

namespace ballast {
namespace {

class Parser {
 public:
  Parser(std::string_view text, uint32_t max_depth) : text_(text), max_depth_(max_depth) {}

  PyLiteral parse_all() {
    PyLiteral value = parse_value(0);
    skip_space();
    if (pos_ != text_.size()) fail("unexpected text after the literal");
    return value;
  }

 private:
  [[noreturn]] void fail(std::string message, bool too_deep = false) const {
    throw PyLiteralError{std::move(message), pos_, too_deep};
  }

  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }

  char peek() {
    skip_space();
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }

  bool take_word(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    size_t after = pos_ + word.size();
    if (after < text_.size() &&
        (std::isalnum(static_cast<unsigned char>(text_[after])) || text_[after] == '_'))
      return false;
    pos_ = after;
    return true;
  }

  PyLiteral parse_value(uint32_t depth) {
    if (depth > max_depth_)
      fail(fmt::format("literal nests deeper than {} levels", max_depth_), true);
    count_op();
    char c = peek();
    if (c == '\'' || c == '"') return parse_string();
    if (c == 'u' && pos_ + 1 < text_.size() &&
        (text_[pos_ + 1] == '\'' || text_[pos_ + 1] == '"')) {
      ++pos_;
      return parse_string();
    }
    if (c == '-' || c == '+' || (c >= '0' && c <= '9')) return parse_integer();
    if (c == '(') return parse_sequence(PyLiteral::Kind::tuple, ')', depth);
    if (c == '[') return parse_sequence(PyLiteral::Kind::list, ']', depth);
    if (c == '{') return parse_dict(depth);
    PyLiteral v;
    const bool is_true = take_word("True");
    if (is_true || take_word("False")) {
      v.kind = PyLiteral::Kind::boolean;
      v.boolean = is_true;
      return v;
    }
    if (take_word("None")) return v;
    fail(pos_ < text_.size() ? fmt::format("unexpected character '{}'", text_[pos_])
                             : std::string("unexpected end of text"));
  }

  PyLiteral parse_string() {
    const char quote = text_[pos_++];
    PyLiteral v;
    v.kind = PyLiteral::Kind::string;
    while (true) {
      if (pos_ >= text_.size() || text_[pos_] == '\n') fail("unterminated string");
      char c = text_[pos_++];
      if (c == quote) return v;
      if (c != '\\') {
        v.text += c;
        continue;
      }
      if (pos_ >= text_.size()) fail("unterminated string");
      char e = text_[pos_++];
      switch (e) {
        case '\\':
        case '\'':
        case '"': v.text += e; break;
        case 'n': v.text += '\n'; break;
        case 't': v.text += '\t'; break;
        case 'r': v.text += '\r'; break;
        case '0': v.text += '\0'; break;
        default:
          v.text += '\\';
          v.text += e;
          break;  // Python keeps unknown escapes as written
      }
    }
  }

  PyLiteral parse_integer() {
    bool negative = text_[pos_] == '-';
    if (text_[pos_] == '-' || text_[pos_] == '+') ++pos_;
    if (pos_ >= text_.size() || text_[pos_] < '0' || text_[pos_] > '9') fail("expected digits");
    uint64_t magnitude = 0;
    const uint64_t max = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      uint64_t digit = static_cast<uint64_t>(text_[pos_++] - '0');
      if (magnitude > (max - digit) / 10) fail("integer does not fit in 64 bits");
      magnitude = magnitude * 10 + digit;
    }
    if (pos_ < text_.size() && (text_[pos_] == 'L' || text_[pos_] == 'l')) ++pos_;
    PyLiteral v;
    v.kind = PyLiteral::Kind::integer;
    v.integer = negative ? static_cast<int64_t>(~magnitude + 1) : static_cast<int64_t>(magnitude);
    return v;
  }

  // Items separated by commas, an optional trailing comma; `(x)` without a comma is x.
  PyLiteral parse_sequence(PyLiteral::Kind kind, char close, uint32_t depth) {
    ++pos_;
    PyLiteral v;
    v.kind = kind;
    bool saw_comma = false;
    while (peek() != close) {
      v.items.push_back(parse_value(depth + 1));
      if (peek() == ',') {
        ++pos_;
        saw_comma = true;
      } else if (peek() != close) {
        fail(fmt::format("expected ',' or '{}'", close));
      }
    }
    ++pos_;
    if (kind == PyLiteral::Kind::tuple && v.items.size() == 1 && !saw_comma)
      return std::move(v.items.front());
    return v;
  }

  PyLiteral parse_dict(uint32_t depth) {
    ++pos_;
    PyLiteral v;
    v.kind = PyLiteral::Kind::dict;
    std::unordered_set<std::string, StringHash, CountedEqual> seen;  // a hash lookup per key
    while (peek() != '}') {
      size_t key_pos = pos_;
      PyLiteral key = parse_value(depth + 1);
      if (key.kind != PyLiteral::Kind::string) {
        pos_ = key_pos;
        fail("dict key is not a string");
      }
      if (!seen.insert(key.text).second) {
        pos_ = key_pos;
        fail(fmt::format("duplicate key '{}'", key.text));
      }
      if (peek() != ':') fail("expected ':' after a dict key");
      ++pos_;
      v.keys.push_back(std::move(key.text));
      v.items.push_back(parse_value(depth + 1));
      if (peek() == ',')
        ++pos_;
      else if (peek() != '}')
        fail("expected ',' or '}'");
    }
    ++pos_;
    return v;
  }

  std::string_view text_;
  uint32_t max_depth_;
  size_t pos_ = 0;
};

}  // namespace

PyLiteral parse_py_literal(std::string_view text, uint32_t max_depth) {
  return Parser(text, max_depth).parse_all();
}

}  // namespace ballast
