// Linear-time, depth-bounded JSON checks (see bounded_json.hpp).
#include "util/bounded_json.hpp"

namespace ballast {
namespace {

// nlohmann's SAX interface; every value is accepted and dropped.
class CheckingSax {
 public:
  explicit CheckingSax(uint32_t max_depth) : max_depth_(max_depth) {}

  bool null() { return true; }
  bool boolean(bool) { return true; }
  bool number_integer(nlohmann::json::number_integer_t) { return true; }
  bool number_unsigned(nlohmann::json::number_unsigned_t) { return true; }
  bool number_float(nlohmann::json::number_float_t, const std::string&) { return true; }
  bool string(std::string&) { return true; }
  bool binary(nlohmann::json::binary_t&) { return true; }
  bool start_object(std::size_t) { return open(); }
  bool start_array(std::size_t) { return open(); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(std::string&) { return true; }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::json::exception& e) {
    problem_ = {JsonProblem::Kind::syntax, e.what(), position};
    return false;
  }

  JsonProblem problem() const { return problem_; }

 private:
  bool open() {
    if (++depth_ > max_depth_) {
      problem_ = {JsonProblem::Kind::too_deep, {}};
      return false;
    }
    return true;
  }
  bool close() {
    --depth_;
    return true;
  }

  uint32_t max_depth_;
  uint32_t depth_ = 0;
  JsonProblem problem_;
};

}  // namespace

JsonProblem check_json(std::string_view text, uint32_t max_depth) {
  CheckingSax sax(max_depth);
  nlohmann::json::sax_parse(text.begin(), text.end(), &sax);
  return sax.problem();
}

nlohmann::json parse_checked_json(std::string_view text) {
  return nlohmann::json::parse(text.begin(), text.end());
}

}  // namespace ballast
