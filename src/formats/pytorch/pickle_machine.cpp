// The restricted pickle machine (see pickle_machine.hpp). Opcode meanings follow CPython's
// Lib/pickle.py and pickletools.py; only the data-building subset is implemented here, and
// every name or call goes through PickleHooks.
#include "formats/pytorch/pickle_machine.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstring>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "util/checked.hpp"
#include "util/error_text.hpp"
#include "util/op_count.hpp"
#include "util/utf8.hpp"

namespace ballast {

std::string_view py_kind_name(PyKind kind) {
  switch (kind) {
    case PyKind::none: return "None";
    case PyKind::boolean: return "bool";
    case PyKind::integer:
    case PyKind::big_integer: return "int";
    case PyKind::floating: return "float";
    case PyKind::string: return "str";
    case PyKind::bytes: return "bytes";
    case PyKind::tuple: return "tuple";
    case PyKind::list: return "list";
    case PyKind::dict: return "dict";
    case PyKind::set: return "set";
    case PyKind::global: return "global";
    case PyKind::object: return "object";
  }
  return "?";
}

namespace {

constexpr uint64_t kChunk = 64 * 1024;
constexpr int kHighestProtocol = 5;
constexpr size_t kMaxLine = 4096;  // text opcodes (protocol 0) carry short lines

// Buffered sequential reads over a window of a ByteSource.
class StreamReader {
 public:
  StreamReader(const PickleStream& stream, uint64_t max_bytes)
      : stream_(stream), visible_(std::min(stream.length, max_bytes)) {}

  uint64_t position() const { return pos_; }
  uint64_t remaining() const { return visible_ - pos_; }

  uint8_t byte() {
    uint8_t b;
    read(&b, 1);
    return b;
  }

  template <typename T>
  T little_endian() {
    T v;
    read(&v, sizeof v);
    static_assert(std::endian::native == std::endian::little, "little-endian hosts only");
    return v;
  }

  std::string bytes(uint64_t n, uint64_t max_length) {
    if (n > max_length)
      throw Error(ErrorCode::limit_exceeded,
                  limit_message("string length", n, "max_string_length", max_length));
    need(n);
    std::string out(static_cast<size_t>(n), '\0');
    read(out.data(), n);
    return out;
  }

  // A protocol-0 line, without its '\n'.
  std::string line() {
    std::string out;
    for (;;) {
      char c = static_cast<char>(byte());
      if (c == '\n') return out;
      if (out.size() == kMaxLine)
        throw Error(ErrorCode::invalid_format, "text opcode line longer than 4096 bytes");
      out.push_back(c);
    }
  }

 private:
  void need(uint64_t n) const {
    if (n <= remaining()) return;
    if (visible_ < stream_.length)
      throw Error(ErrorCode::limit_exceeded,
                  limit_message("pickle size", std::nullopt, "max_pickle_bytes", visible_));
    throw Error(ErrorCode::invalid_format,
                fmt::format("truncated pickle: {} bytes needed, {} left", n, remaining()));
  }

  void read(void* out, uint64_t n) {
    need(n);
    auto* dst = static_cast<std::byte*>(out);
    while (n > 0) {
      if (pos_ < buffer_start_ || pos_ >= buffer_start_ + buffer_.size()) {
        if (n >= kChunk) {  // large strings bypass the buffer
          stream_.source->read_at(stream_.offset + pos_, {dst, static_cast<size_t>(n)});
          pos_ += n;
          return;
        }
        fill();
      }
      const uint64_t in_buffer = buffer_start_ + buffer_.size() - pos_;
      const uint64_t take = std::min(n, in_buffer);
      std::memcpy(dst, buffer_.data() + (pos_ - buffer_start_), static_cast<size_t>(take));
      dst += take;
      pos_ += take;
      n -= take;
    }
  }

  void fill() {
    buffer_start_ = pos_;
    buffer_.resize(static_cast<size_t>(std::min(kChunk, remaining())));
    stream_.source->read_at(stream_.offset + pos_, buffer_);
  }

  const PickleStream& stream_;
  const uint64_t visible_;  // bytes of the stream this pickle may use
  uint64_t pos_ = 0;
  uint64_t buffer_start_ = 0;
  std::vector<std::byte> buffer_;
};

void append_utf8(std::string& out, uint32_t cp) {
  if (cp > 0x10FFFF) throw Error(ErrorCode::invalid_format, "code point out of range");
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

uint32_t parse_hex(std::string_view digits) {
  uint32_t v = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v, 16);
  if (ec != std::errc{} || end != digits.data() + digits.size())
    throw Error(ErrorCode::invalid_format, "bad hex escape in a text string");
  return v;
}

// UNICODE (protocol 0): raw-unicode-escape, i.e. latin-1 bytes plus \uXXXX and \UXXXXXXXX.
std::string decode_raw_unicode_escape(std::string_view in) {
  std::string out;
  for (size_t i = 0; i < in.size(); ++i) {
    const char c = in[i];
    if (c == '\\' && i + 1 < in.size() && (in[i + 1] == 'u' || in[i + 1] == 'U')) {
      const size_t digits = in[i + 1] == 'u' ? 4 : 8;
      if (in.size() - i - 2 < digits)
        throw Error(ErrorCode::invalid_format, "truncated \\u escape in a UNICODE string");
      append_utf8(out, parse_hex(in.substr(i + 2, digits)));
      i += 1 + digits;
    } else {
      append_utf8(out, static_cast<unsigned char>(c));
    }
  }
  return out;
}

// STRING (protocol 0): a quoted Python 2 repr with backslash escapes.
std::string decode_quoted_string(std::string_view in) {
  if (in.size() < 2 || (in.front() != '\'' && in.front() != '"') || in.back() != in.front())
    throw Error(ErrorCode::invalid_format, "STRING opcode argument is not a quoted string");
  in = in.substr(1, in.size() - 2);
  std::string out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '\\') {
      out.push_back(in[i]);
      continue;
    }
    if (++i == in.size()) throw Error(ErrorCode::invalid_format, "dangling backslash in STRING");
    switch (in[i]) {
      case 'n': out.push_back('\n'); break;
      case 'r': out.push_back('\r'); break;
      case 't': out.push_back('\t'); break;
      case '0': out.push_back('\0'); break;
      case 'x':
        if (in.size() - i - 1 < 2) throw Error(ErrorCode::invalid_format, "truncated \\x escape");
        out.push_back(static_cast<char>(parse_hex(in.substr(i + 1, 2))));
        i += 2;
        break;
      default: out.push_back(in[i]); break;  // \\ \' \"
    }
  }
  return out;
}

int64_t parse_decimal(std::string_view text) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size())
    throw Error(ErrorCode::invalid_format, fmt::format("bad integer literal '{}'", text));
  return v;
}

// A decimal literal of any size as little-endian two's complement bytes (LONG, protocol 0).
std::string decimal_to_le_bytes(std::string_view text) {
  const bool negative = !text.empty() && text.front() == '-';
  if (negative || (!text.empty() && text.front() == '+')) text.remove_prefix(1);
  if (text.empty()) throw Error(ErrorCode::invalid_format, "empty integer literal");
  std::vector<uint8_t> magnitude;  // little-endian
  for (char c : text) {
    if (c < '0' || c > '9') throw Error(ErrorCode::invalid_format, "bad LONG literal");
    unsigned carry = static_cast<unsigned>(c - '0');
    for (uint8_t& b : magnitude) {
      unsigned v = b * 10u + carry;
      b = static_cast<uint8_t>(v);
      carry = v >> 8;
    }
    if (carry) magnitude.push_back(static_cast<uint8_t>(carry));
  }
  magnitude.push_back(0);  // room for the sign bit
  if (negative) {
    unsigned carry = 1;
    for (uint8_t& b : magnitude) {
      unsigned v = static_cast<uint8_t>(~b) + carry;
      b = static_cast<uint8_t>(v);
      carry = v >> 8;
    }
  }
  return {magnitude.begin(), magnitude.end()};
}

// An integer from little-endian two's-complement bytes: int64 when it fits, else big.
PyValue integer_from_le_bytes(std::string bytes) {
  if (bytes.size() > 8) {
    // Drop redundant sign bytes so that small values in long encodings still fit.
    const char sign = (static_cast<unsigned char>(bytes.back()) & 0x80) ? '\xff' : '\0';
    while (bytes.size() > 8 && bytes.back() == sign &&
           ((static_cast<unsigned char>(bytes[bytes.size() - 2]) & 0x80) != 0) == (sign != 0))
      bytes.pop_back();
    if (bytes.size() > 8) return {.kind = PyKind::big_integer, .text = std::move(bytes)};
  }
  uint64_t v = 0;
  for (size_t i = bytes.size(); i-- > 0;) v = v << 8 | static_cast<unsigned char>(bytes[i]);
  if (!bytes.empty() && bytes.size() < 8 && (static_cast<unsigned char>(bytes.back()) & 0x80))
    v |= ~uint64_t{0} << (8 * bytes.size());
  return {.kind = PyKind::integer, .integer = static_cast<int64_t>(v)};
}

double parse_float(std::string_view text) {
  double v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size())
    throw Error(ErrorCode::invalid_format, fmt::format("bad float literal '{}'", text));
  return v;
}

class Machine {
 public:
  Machine(const PickleStream& stream, const Limits& limits, PyArena& arena, PickleHooks& hooks)
      : stream_(stream),
        limits_(limits),
        arena_(arena),
        hooks_(hooks),
        in_(stream, limits.max_pickle_bytes) {}

  UnpickleResult run() {
    for (;;) {
      const uint64_t at = in_.position();
      uint8_t op = 0;
      try {
        op = in_.byte();
        count_op();
        if (step(op)) break;
      } catch (const Error& e) {
        ErrorContext context = e.context();
        if (context.source.empty()) context.source = stream_.source->name();
        if (!context.offset) context.offset = stream_.offset + at;
        throw Error(e.code(),
                    fmt::format("{} (opcode 0x{:02x} in {} at byte {} of the pickle)", e.message(),
                                op, stream_.where, at),
                    context);
      }
    }
    return {.value = result_, .end = stream_.offset + in_.position(), .protocol = protocol_};
  }

 private:
  // Executes one opcode; true at STOP.
  bool step(uint8_t op) {
    switch (op) {
      case 0x80: {  // PROTO
        protocol_ = in_.byte();
        if (protocol_ > kHighestProtocol)
          throw Error(ErrorCode::unsupported, fmt::format("pickle protocol {}", protocol_));
        return false;
      }
      case 0x95: {  // FRAME: a length prefix we need not track
        const uint64_t n = in_.little_endian<uint64_t>();
        if (n > in_.remaining()) throw Error(ErrorCode::invalid_format, "FRAME past the end");
        return false;
      }
      case '.':  // STOP
        result_ = pop();
        return true;
      case '(': mark(); return false;
      case '0':
        if (stack_.size() > stack_floor())
          stack_.pop_back();
        else
          pop_mark();
        return false;
      case '1': pop_mark(); return false;
      case '2': push(top()); return false;

      case 'N': push(arena_.none()); return false;
      case 0x88: push(arena_.boolean(true)); return false;
      case 0x89: push(arena_.boolean(false)); return false;
      case 'I': {
        const std::string text = in_.line();
        if (text == "00" || text == "01")
          push(arena_.boolean(text == "01"));
        else
          push(arena_.integer(parse_decimal(text)));
        return false;
      }
      case 'J': push(arena_.integer(in_.little_endian<int32_t>())); return false;
      case 'K': push(arena_.integer(in_.byte())); return false;
      case 'M': push(arena_.integer(in_.little_endian<uint16_t>())); return false;
      case 'L': {
        std::string text = in_.line();
        if (!text.empty() && text.back() == 'L') text.pop_back();
        push(arena_.add(integer_from_le_bytes(decimal_to_le_bytes(text))));
        return false;
      }
      case 0x8a:
        push(arena_.add(integer_from_le_bytes(in_.bytes(in_.byte(), max_len()))));
        return false;
      case 0x8b: {
        const int32_t n = in_.little_endian<int32_t>();
        if (n < 0) throw Error(ErrorCode::invalid_format, "negative LONG4 length");
        push(arena_.add(integer_from_le_bytes(in_.bytes(static_cast<uint64_t>(n), max_len()))));
        return false;
      }
      case 'F': push(floating(parse_float(in_.line()))); return false;
      case 'G': {
        const uint64_t bits = __builtin_bswap64(in_.little_endian<uint64_t>());  // big-endian
        push(floating(std::bit_cast<double>(bits)));
        return false;
      }

      case 'S': push(text_of(decode_quoted_string(in_.line()), Utf8::strict)); return false;
      case 'V':
        push(arena_.text(PyKind::string, decode_raw_unicode_escape(in_.line())));
        return false;
      case 'T': {
        const int32_t n = in_.little_endian<int32_t>();
        if (n < 0) throw Error(ErrorCode::invalid_format, "negative BINSTRING length");
        push(string(static_cast<uint64_t>(n), Utf8::strict));
        return false;
      }
      case 'U': push(string(in_.byte(), Utf8::strict)); return false;
      case 'X': push(string(in_.little_endian<uint32_t>(), Utf8::surrogatepass)); return false;
      case 0x8c: push(string(in_.byte(), Utf8::surrogatepass)); return false;
      case 0x8d: push(string(in_.little_endian<uint64_t>(), Utf8::surrogatepass)); return false;
      case 'B': push(text(PyKind::bytes, in_.little_endian<uint32_t>())); return false;
      case 'C': push(text(PyKind::bytes, in_.byte())); return false;
      case 0x8e:
      case 0x96: push(text(PyKind::bytes, in_.little_endian<uint64_t>())); return false;

      case ')': push(arena_.container(PyKind::tuple)); return false;
      case 0x85:
      case 0x86:
      case 0x87: {
        const size_t n = op - 0x84u;
        push(arena_.container(PyKind::tuple, pop_n(n)));
        return false;
      }
      case 't': push(arena_.container(PyKind::tuple, pop_mark())); return false;
      case ']': push(arena_.container(PyKind::list)); return false;
      case 'l': push(arena_.container(PyKind::list, pop_mark())); return false;
      case '}': push(arena_.container(PyKind::dict)); return false;
      case 'd': {
        std::vector<PyId> items = pop_mark();
        if (items.size() % 2) throw Error(ErrorCode::invalid_format, "DICT with an odd count");
        push(arena_.container(PyKind::dict, std::move(items)));
        return false;
      }
      case 0x8f: push(arena_.container(PyKind::set)); return false;
      case 0x91: push(arena_.container(PyKind::set, pop_mark())); return false;
      case 'a': {
        PyId item = pop();
        extend(top(), PyKind::list, {item});
        return false;
      }
      case 'e': {
        std::vector<PyId> items = pop_mark();
        extend(top(), PyKind::list, items);
        return false;
      }
      case 0x90: {
        std::vector<PyId> items = pop_mark();
        extend(top(), PyKind::set, items);
        return false;
      }
      case 's': {
        std::vector<PyId> pair = pop_n(2);
        extend(top(), PyKind::dict, pair);
        return false;
      }
      case 'u': {
        std::vector<PyId> items = pop_mark();
        if (items.size() % 2) throw Error(ErrorCode::invalid_format, "SETITEMS with an odd count");
        extend(top(), PyKind::dict, items);
        return false;
      }

      case 'p': memo_put(static_cast<uint64_t>(parse_decimal(in_.line()))); return false;
      case 'q': memo_put(in_.byte()); return false;
      case 'r': memo_put(in_.little_endian<uint32_t>()); return false;
      case 0x94: memo_put(memo_.size()); return false;
      case 'g': memo_get(static_cast<uint64_t>(parse_decimal(in_.line()))); return false;
      case 'h': memo_get(in_.byte()); return false;
      case 'j': memo_get(in_.little_endian<uint32_t>()); return false;

      case 'c': {
        const std::string module = in_.line();
        const std::string name = in_.line();
        push(hooks_.global(arena_, module, name));
        return false;
      }
      case 0x93: {
        const PyId name = pop();
        const PyId module = pop();
        if (arena_[module].kind != PyKind::string || arena_[name].kind != PyKind::string)
          throw Error(ErrorCode::invalid_format, "STACK_GLOBAL needs two strings");
        push(hooks_.global(arena_, arena_[module].text, arena_[name].text));
        return false;
      }
      case 'R': {
        const PyId args = pop();
        const PyId callable = pop();
        require_tuple(args, "REDUCE");
        push(hooks_.call(arena_, callable, args));
        return false;
      }
      case 0x81: {
        const PyId args = pop();
        const PyId cls = pop();
        require_tuple(args, "NEWOBJ");
        push(hooks_.new_object(arena_, cls, args));
        return false;
      }
      case 0x92: {
        const PyId kwargs = pop();
        const PyId args = pop();
        const PyId cls = pop();
        require_tuple(args, "NEWOBJ_EX");
        if (arena_[kwargs].kind != PyKind::dict || !arena_[kwargs].items.empty())
          throw Error(ErrorCode::unsupported, "NEWOBJ_EX with keyword arguments");
        push(hooks_.new_object(arena_, cls, args));
        return false;
      }
      case 'i': {  // INST: module, name, then positional arguments since the mark
        const std::string module = in_.line();
        const std::string name = in_.line();
        const PyId cls = hooks_.global(arena_, module, name);
        push(hooks_.call(arena_, cls, arena_.container(PyKind::tuple, pop_mark())));
        return false;
      }
      case 'o': {  // OBJ: class and arguments since the mark
        std::vector<PyId> items = pop_mark();
        if (items.empty()) throw Error(ErrorCode::invalid_format, "OBJ without a class");
        const PyId cls = items.front();
        items.erase(items.begin());
        push(hooks_.call(arena_, cls, arena_.container(PyKind::tuple, std::move(items))));
        return false;
      }
      case 'b': {
        const PyId state = pop();
        hooks_.build(arena_, top(), state);
        return false;
      }
      case 'P':
        push(hooks_.persistent_load(arena_, arena_.text(PyKind::string, in_.line())));
        return false;
      case 'Q': push(hooks_.persistent_load(arena_, pop())); return false;

      case 0x82:
      case 0x83:
      case 0x84:
        throw Error(ErrorCode::unsupported, "extension-registry opcodes (EXT1/2/4) name code");
      case 0x97:
      case 0x98: throw Error(ErrorCode::unsupported, "out-of-band pickle buffers");
      default: throw Error(ErrorCode::invalid_format, "unknown pickle opcode");
    }
  }

  uint64_t max_len() const { return limits_.max_string_length; }

  PyId text(PyKind kind, uint64_t length) {
    return arena_.text(kind, in_.bytes(length, max_len()));
  }
  // A str as torch.load decodes it: BINUNICODE opcodes as UTF-8 with 'surrogatepass', the
  // protocol 0-2 byte strings with torch's encoding='utf-8', strictly. torch refuses what
  // does not decode, so ballast does too: the same file never gives two sets of names.
  enum class Utf8 { strict, surrogatepass };
  PyId string(uint64_t length, Utf8 rule) { return text_of(in_.bytes(length, max_len()), rule); }
  PyId text_of(std::string bytes, Utf8 rule) {
    if (!is_valid_utf8(bytes, rule == Utf8::surrogatepass))
      throw Error(ErrorCode::invalid_format,
                  "a pickle string is not valid UTF-8 (torch.load refuses it)");
    return arena_.text(PyKind::string, std::move(bytes));
  }
  PyId floating(double v) { return arena_.add({.kind = PyKind::floating, .floating = v}); }

  void push(PyId id) {
    if (stack_.size() >= limits_.max_pickle_stack)
      throw Error(ErrorCode::limit_exceeded,
                  limit_message("pickle stack depth", std::nullopt, "max_pickle_stack",
                                limits_.max_pickle_stack));
    stack_.push_back(id);
  }
  PyId pop() {
    if (stack_.size() <= stack_floor())
      throw Error(ErrorCode::invalid_format, "pickle stack underflow");
    PyId id = stack_.back();
    stack_.pop_back();
    return id;
  }
  PyId top() const {
    if (stack_.size() <= stack_floor())
      throw Error(ErrorCode::invalid_format, "pickle stack underflow");
    return stack_.back();
  }
  std::vector<PyId> pop_n(size_t n) {
    if (stack_.size() - stack_floor() < n)
      throw Error(ErrorCode::invalid_format, "pickle stack underflow");
    std::vector<PyId> items(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
    stack_.resize(stack_.size() - n);
    return items;
  }
  // Items above the innermost mark may not be popped by ordinary opcodes.
  size_t stack_floor() const { return marks_.empty() ? 0 : marks_.back(); }

  void mark() {
    if (marks_.size() >= limits_.max_pickle_stack)
      throw Error(ErrorCode::limit_exceeded, "too many pickle marks");
    marks_.push_back(stack_.size());
  }
  std::vector<PyId> pop_mark() {
    if (marks_.empty()) throw Error(ErrorCode::invalid_format, "no MARK on the pickle stack");
    const size_t from = marks_.back();
    marks_.pop_back();
    std::vector<PyId> items(stack_.begin() + static_cast<std::ptrdiff_t>(from), stack_.end());
    stack_.resize(from);
    count_op(items.size());
    return items;
  }

  void extend(PyId container, PyKind kind, const std::vector<PyId>& items) {
    const PyKind target = arena_[container].kind;
    if (target != kind)
      throw Error(ErrorCode::invalid_format, fmt::format("adding items to a {} (expected a {})",
                                                         py_kind_name(target), py_kind_name(kind)));
    arena_.append(container, items);
  }

  void require_tuple(PyId args, std::string_view opcode) const {
    if (arena_[args].kind != PyKind::tuple)
      throw Error(ErrorCode::invalid_format, fmt::format("{} arguments are not a tuple", opcode));
  }

  void memo_put(uint64_t index) {
    if (memo_.size() >= limits_.max_pickle_memo && !memo_.contains(index))
      throw Error(ErrorCode::limit_exceeded,
                  limit_message("pickle memo size", std::nullopt, "max_pickle_memo",
                                limits_.max_pickle_memo));
    auto [it, inserted] = memo_.try_emplace(index, top());
    if (inserted)
      arena_.charge(sizeof(*it) + 2 * sizeof(void*), "a memo entry");
    else
      it->second = top();
  }
  void memo_get(uint64_t index) {
    auto it = memo_.find(index);
    if (it == memo_.end())
      throw Error(ErrorCode::invalid_format, fmt::format("memo key {} was never stored", index));
    push(it->second);
  }

  const PickleStream& stream_;
  const Limits& limits_;
  PyArena& arena_;
  PickleHooks& hooks_;
  StreamReader in_;
  std::vector<PyId> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, PyId> memo_;
  PyId result_ = 0;
  int protocol_ = 0;
};

}  // namespace

UnpickleResult unpickle(const PickleStream& stream, const Limits& limits, PyArena& arena,
                        PickleHooks& hooks) {
  return Machine(stream, limits, arena, hooks).run();
}

}  // namespace ballast
