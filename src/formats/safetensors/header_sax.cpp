// One-pass SAX reading of a safetensors header (see header_sax.hpp).
#include "formats/safetensors/header_sax.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ballast/error.hpp"
#include "util/error_text.hpp"
#include "util/op_count.hpp"

namespace ballast {
namespace {

using nlohmann::json;

constexpr std::string_view kMetadataKey = "__metadata__";

// nlohmann's SAX interface. Depth 1 is the top-level object, depth 2 a tensor entry (or the
// metadata object), depth 3 the "shape" or "data_offsets" array being collected. A value
// that is neither collected nor checked is skipped, containers included.
class HeaderSax {
 public:
  HeaderSax(const HeaderSaxLimits& limits, const RawEntrySink& on_entry)
      : limits_(limits), on_entry_(on_entry) {}

  bool null() { return scalar(); }
  bool boolean(bool) { return scalar(); }
  bool number_integer(json::number_integer_t) { return scalar(); }
  bool number_float(json::number_float_t, const std::string&) { return scalar(); }
  bool binary(json::binary_t&) { return scalar(); }

  bool number_unsigned(json::number_unsigned_t value) {
    if (active() && depth_ == 3 && collecting_) {
      if (collecting_->kept.size() < limits_.max_kept_numbers) collecting_->kept.push_back(value);
      ++collecting_->count;
      return true;
    }
    return scalar();
  }

  bool string(std::string& value) {
    if (active() && depth_ == 2 && in_entry_ && field_ == Field::dtype) {
      entry_.dtype = std::move(value);
      return true;
    }
    if (active() && depth_ == 2 && !in_entry_) {
      metadata_[metadata_key_] = std::move(value);
      return true;
    }
    return scalar();
  }

  bool start_object(std::size_t) {
    if (!open()) return false;
    if (!active()) return true;
    if (depth_ == 1) return true;
    if (depth_ == 2) {
      if (top_key_is_metadata_) {
        in_entry_ = false;
        return true;
      }
      in_entry_ = true;
      for (Field f : {Field::dtype, Field::shape, Field::data_offsets}) forget(f);
      return true;
    }
    value_is_not_what_was_expected(depth_ - 1);
    skip_from_ = depth_;
    return true;
  }

  bool start_array(std::size_t) {
    if (!open()) return false;
    if (!active()) return true;
    if (depth_ == 3 && in_entry_ && (field_ == Field::shape || field_ == Field::data_offsets)) {
      collecting_ = field_ == Field::shape ? &entry_.shape : &entry_.data_offsets;
      collecting_->present = true;
      return true;
    }
    value_is_not_what_was_expected(depth_ - 1);
    skip_from_ = depth_;
    return true;
  }

  bool key(std::string& name) {
    count_op();  // every key at every depth (parser_scaling_test)
    if (!active()) return true;
    if (depth_ == 1) {
      top_key_is_metadata_ = name == kMetadataKey;
      if (top_key_is_metadata_ && seen_metadata_)
        content_error(ErrorCode::invalid_format, "duplicate tensor name in header",
                      std::string(kMetadataKey));
      seen_metadata_ = seen_metadata_ || top_key_is_metadata_;
      entry_.name = std::move(name);
    } else if (depth_ == 2 && in_entry_) {
      field_ = name == "dtype"          ? Field::dtype
               : name == "shape"        ? Field::shape
               : name == "data_offsets" ? Field::data_offsets
                                        : Field::other;
      forget(field_);  // a repeated key replaces the earlier value, as in a JSON object
    } else if (depth_ == 2) {
      metadata_key_ = std::move(name);
    }
    return true;
  }

  bool end_object() {
    if (active() && depth_ == 2 && in_entry_) {
      try {
        on_entry_(entry_);
      } catch (const Error& e) {
        content_ = e;
      }
    }
    return close();
  }

  bool end_array() {
    if (depth_ == 3) collecting_ = nullptr;
    return close();
  }

  bool parse_error(std::size_t position, const std::string&, const json::exception& e) {
    structural_ =
        Error(ErrorCode::invalid_format, fmt::format("header is not valid JSON: {}", e.what()),
              {.offset = limits_.base_offset + position});
    return false;
  }

  // Throws the problem that decides the file, if any.
  void throw_problem() const {
    if (structural_) throw *structural_;
    if (content_) throw *content_;
  }

  std::string metadata_json() const { return metadata_.dump(); }

 private:
  enum class Field : uint8_t { dtype, shape, data_offsets, other };

  // Drops what the entry holds for `field`.
  void forget(Field field) {
    if (field == Field::dtype) entry_.dtype.reset();
    if (field == Field::shape) entry_.shape.clear();
    if (field == Field::data_offsets) entry_.data_offsets.clear();
  }

  // Content is still being checked: no problem yet and not inside a skipped value.
  bool active() const { return !content_ && skip_from_ == 0; }

  bool open() {
    if (++depth_ > limits_.max_depth) {
      structural_ = Error(ErrorCode::limit_exceeded,
                          limit_message("JSON header nesting depth", std::nullopt, "max_json_depth",
                                        limits_.max_depth),
                          {.offset = limits_.base_offset});
      return false;
    }
    return true;
  }

  bool close() {
    if (skip_from_ != 0 && depth_ == skip_from_) skip_from_ = 0;
    --depth_;
    return true;
  }

  bool scalar() {
    if (active()) value_is_not_what_was_expected(depth_);
    return true;
  }

  // A value where the layout wants something else; `level` is the depth of its container.
  void value_is_not_what_was_expected(uint32_t level) {
    if (level == 0) {
      content_error(ErrorCode::invalid_format, "header is not a JSON object", {});
    } else if (level == 1 && top_key_is_metadata_) {
      content_error(ErrorCode::invalid_format, "__metadata__ is not an object of strings",
                    std::string(kMetadataKey));
    } else if (level == 1) {
      content_error(ErrorCode::invalid_format, "tensor entry is not an object", entry_.name);
    } else if (level == 2 && !in_entry_) {
      content_error(ErrorCode::invalid_format,
                    fmt::format("__metadata__ value for '{}' is not a string", metadata_key_),
                    std::string(kMetadataKey));
    } else if (level == 2) {
      forget(field_);  // a field of the wrong type counts as missing; the sink names it
    } else if (level == 3 && collecting_) {
      collecting_->all_unsigned = false;
      ++collecting_->count;
    }
  }

  void content_error(ErrorCode code, std::string message, std::string tensor) {
    content_ = Error(code, std::move(message),
                     {.tensor = std::move(tensor), .offset = limits_.base_offset});
  }

  const HeaderSaxLimits& limits_;
  const RawEntrySink& on_entry_;
  uint32_t depth_ = 0;
  uint32_t skip_from_ = 0;  // the depth of the skipped container being read; 0 when none
  bool top_key_is_metadata_ = false;
  bool seen_metadata_ = false;
  bool in_entry_ = false;
  Field field_ = Field::other;
  RawHeaderEntry entry_;
  RawHeaderEntry::Numbers* collecting_ = nullptr;
  std::string metadata_key_;
  json metadata_ = json::object();
  std::optional<Error> structural_;  // syntax or depth: decides the file wherever it is
  std::optional<Error> content_;     // the first problem in the content
};

}  // namespace

std::string read_safetensors_header(std::string_view text, const HeaderSaxLimits& limits,
                                    const RawEntrySink& on_entry) {
  // nlohmann's reader takes a NUL byte for the end of its input, so "{...}\0garbage" would
  // pass; the safetensors crate (serde_json) refuses any byte after the JSON but whitespace,
  // and so does ballast. Inside the JSON a raw NUL is never valid either.
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos)
    throw Error(ErrorCode::invalid_format,
                "NUL byte in the JSON header (only whitespace may pad it after the JSON)",
                {.offset = limits.base_offset + nul});
  HeaderSax sax(limits, on_entry);
  json::sax_parse(text.begin(), text.end(), &sax);
  sax.throw_problem();
  return sax.metadata_json();
}

}  // namespace ballast
