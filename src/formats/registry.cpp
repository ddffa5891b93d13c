// The format-parser registry shared by built-in and custom formats, and TensorEntry helpers.
#include <algorithm>
#include <mutex>
#include <vector>

#include "ballast/error.hpp"
#include "ballast/parser.hpp"
#include "formats/builtin.hpp"
#include "util/checked.hpp"
#include "util/shape_util.hpp"

namespace ballast {
namespace {

struct Registry {
  std::mutex mutex;
  std::vector<std::shared_ptr<const FormatParser>> parsers;  // probe order
};

Registry& registry() {
  static Registry r;
  return r;
}

// Built-ins are registered lazily, outside the registry lock, on first use.
void ensure_builtins() {
  static std::once_flag once;
  std::call_once(once, [] { register_builtin_formats(); });
}

}  // namespace

uint64_t TensorEntry::numel() const { return checked_numel(shape).value_or(0); }

uint64_t TensorEntry::nbytes() const { return dtype_bytes_for(dtype, numel()).value_or(0); }

bool TensorEntry::is_contiguous() const { return strides.empty() || is_row_major(shape, strides); }

void register_format_parser(std::shared_ptr<const FormatParser> parser) {
  if (!parser) throw Error(ErrorCode::invalid_argument, "register_format_parser: null parser");
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  auto same = [&](const auto& p) { return p->format() == parser->format(); };
  auto it = std::find_if(r.parsers.begin(), r.parsers.end(), same);
  if (it != r.parsers.end()) {
    *it = std::move(parser);
  } else if (parser->format().kind == WeightFormat::Kind::custom) {
    // A user's format is probed before the built-ins, so its own magic wins.
    r.parsers.insert(r.parsers.begin(), std::move(parser));
  } else {
    r.parsers.push_back(std::move(parser));
  }
}

std::shared_ptr<const FormatParser> find_format_parser(const WeightFormat& format) {
  ensure_builtins();
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  for (const auto& p : r.parsers)
    if (p->format() == format) return p;
  return nullptr;
}

std::vector<std::shared_ptr<const FormatParser>> registered_format_parsers() {
  ensure_builtins();
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  return r.parsers;
}

}  // namespace ballast
