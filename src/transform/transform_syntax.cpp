// The text form of transformations (the CLI's --transform LIST), both ways.
#include <charconv>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ballast/error.hpp"
#include "ballast/transform.hpp"

namespace ballast {
namespace {

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (;;) {
    size_t pos = text.find(sep, start);
    parts.push_back(text.substr(start, pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return parts;
}

class StepParser {
 public:
  explicit StepParser(std::string_view step) : step_(step), parts_(split(step, ':')) {}

  Transformation parse() {
    const auto op = parts_[0];
    if (op == "transpose") return Transpose{int_at(1), int_at(2, 2)};
    if (op == "reshape") return reshape();
    if (op == "cast") return Cast{dtype_at(1, 1)};
    if (op == "slice") return slice();
    if (op == "scale") return Scale{number_at(1)};
    if (op == "quantize") return quantize();
    if (op == "shard") return shard();
    fail("unknown step (expected transpose, reshape, cast, slice, scale, quantize or shard)");
  }

 private:
  [[noreturn]] void fail(std::string_view why) const {
    throw Error(ErrorCode::invalid_argument,
                fmt::format("bad transformation '{}': {}", step_, why));
  }

  void expect_count(size_t lo, size_t hi) const {
    if (parts_.size() < lo || parts_.size() > hi) fail("wrong number of fields");
  }

  template <typename T>
  T parse_number(std::string_view text) const {
    T value{};
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || text.empty())
      fail(fmt::format("'{}' is not a number", text));
    return value;
  }

  int int_at(size_t i, size_t count = 0) const {
    if (count) expect_count(count + 1, count + 1);
    if (i >= parts_.size()) fail("missing field");
    return parse_number<int>(parts_[i]);
  }

  double number_at(size_t i) const {
    expect_count(i + 1, i + 1);
    return parse_number<double>(parts_[i]);
  }

  DType dtype_at(size_t i, size_t count) const {
    expect_count(count + 1, count + 1);
    auto d = parse_dtype(parts_[i]);
    if (!d) fail(unknown_dtype_message(parts_[i]));
    return *d;
  }

  Transformation reshape() const {
    if (parts_.size() < 2) fail("reshape needs at least one dimension");
    Reshape r;
    for (size_t i = 1; i < parts_.size(); ++i) r.shape.push_back(parse_number<int64_t>(parts_[i]));
    return r;
  }

  Transformation slice() const {
    expect_count(4, 4);
    Slice s;
    s.dim = parse_number<int>(parts_[1]);
    if (!parts_[2].empty()) s.start = parse_number<int64_t>(parts_[2]);
    if (!parts_[3].empty()) s.end = parse_number<int64_t>(parts_[3]);
    return s;
  }

  // shard:RANK/WORLD[:DIM[:P1+P2+...]]
  Transformation shard() const {
    expect_count(2, 4);
    Shard s;
    const auto rank_world = split(parts_[1], '/');
    if (rank_world.size() != 2) fail("shard is shard:RANK/WORLD[:DIM[:P1+P2+...]]");
    s.rank = parse_number<int>(rank_world[0]);
    s.world = parse_number<int>(rank_world[1]);
    if (s.world < 1 || s.rank < 0 || s.rank >= s.world)
      fail(fmt::format("rank {} is not in 0..world-1 for world size {}", s.rank, s.world));
    if (parts_.size() > 2) s.dim = parse_number<int>(parts_[2]);
    if (parts_.size() > 3)
      for (auto part : split(parts_[3], '+')) s.parts.push_back(parse_number<int64_t>(part));
    return s;
  }

  Transformation quantize() const {
    if (parts_.size() < 2) fail("quantize needs a scheme");
    QuantizeConfig c;
    const auto scheme = parts_[1];
    if (scheme == "int8") {
      expect_count(2, 3);
      c.scheme = QuantizeConfig::Scheme::int8;
      if (parts_.size() == 3) {
        if (parts_[2] != "sym" && parts_[2] != "asym") fail("int8 mode is sym or asym");
        c.symmetric = parts_[2] == "sym";
      }
    } else if (scheme == "int4") {
      expect_count(3, 3);
      c.scheme = QuantizeConfig::Scheme::int4;
      c.group_size = parse_number<int>(parts_[2]);
    } else if (scheme == "fp8") {
      expect_count(3, 3);
      c.scheme = QuantizeConfig::Scheme::fp8;
      if (parts_[2] == "e4m3")
        c.fp8_dtype = DType::f8_e4m3;
      else if (parts_[2] == "e5m2")
        c.fp8_dtype = DType::f8_e5m2;
      else
        fail("fp8 format is e4m3 or e5m2");
    } else if (scheme == "gptq") {
      expect_count(4, 5);
      c.scheme = QuantizeConfig::Scheme::gptq;
      c.bits = parse_number<int>(parts_[2]);
      c.group_size = parse_number<int>(parts_[3]);
      if (parts_.size() == 5) {
        if (parts_[4] != "desc_act") fail("the optional gptq flag is desc_act");
        c.desc_act = true;
      }
    } else if (scheme == "awq") {
      expect_count(3, 5);
      c.scheme = QuantizeConfig::Scheme::awq;
      c.bits = parse_number<int>(parts_[2]);
      c.zero_point = false;
      size_t next = 3;
      if (next < parts_.size() && parts_[next] != "zp")
        c.group_size = parse_number<int>(parts_[next++]);
      if (next < parts_.size()) {
        if (parts_[next] != "zp") fail("the optional awq flag is zp");
        c.zero_point = true;
        ++next;
      }
      if (next != parts_.size()) fail("awq is quantize:awq:BITS[:GROUP][:zp]");
    } else {
      fail("quantize scheme is int8, int4, fp8, gptq or awq");
    }
    return Quantize{c};
  }

  std::string_view step_;
  std::vector<std::string_view> parts_;
};

std::string optional_index(const std::optional<int64_t>& i) { return i ? std::to_string(*i) : ""; }

struct ToText {
  std::string operator()(const Transpose& t) const {
    return fmt::format("transpose:{}:{}", t.dim0, t.dim1);
  }
  std::string operator()(const Reshape& r) const {
    return fmt::format("reshape:{}", fmt::join(r.shape, ":"));
  }
  std::string operator()(const Cast& c) const {
    return fmt::format("cast:{}", dtype_name(c.dtype));
  }
  std::string operator()(const Slice& s) const {
    return fmt::format("slice:{}:{}:{}", s.dim, optional_index(s.start), optional_index(s.end));
  }
  std::string operator()(const Scale& s) const { return fmt::format("scale:{}", s.factor); }
  std::string operator()(const Shard& s) const {
    std::string text = fmt::format("shard:{}/{}:{}", s.rank, s.world, s.dim);
    if (!s.parts.empty()) text += fmt::format(":{}", fmt::join(s.parts, "+"));
    return text;
  }
  std::string operator()(const Quantize& q) const {
    const auto& c = q.config;
    switch (c.scheme) {
      case QuantizeConfig::Scheme::int8:
        return c.symmetric ? "quantize:int8:sym" : "quantize:int8:asym";
      case QuantizeConfig::Scheme::int4: return fmt::format("quantize:int4:{}", c.group_size);
      case QuantizeConfig::Scheme::fp8:
        return c.fp8_dtype == DType::f8_e5m2 ? "quantize:fp8:e5m2" : "quantize:fp8:e4m3";
      case QuantizeConfig::Scheme::gptq:
        return fmt::format("quantize:gptq:{}:{}{}", c.bits, c.group_size,
                           c.desc_act ? ":desc_act" : "");
      case QuantizeConfig::Scheme::awq:
        return fmt::format("quantize:awq:{}:{}{}", c.bits, c.group_size, c.zero_point ? ":zp" : "");
    }
    return "quantize";
  }
};

}  // namespace

std::string to_string(const Transformation& step) { return std::visit(ToText{}, step); }

std::vector<Transformation> parse_transformations(std::string_view list) {
  std::vector<Transformation> steps;
  if (list.empty()) return steps;
  for (auto step : split(list, ',')) steps.push_back(StepParser(step).parse());
  return steps;
}

}  // namespace ballast
