// FormatParser: turns the bytes of one checkpoint file into an Index, for built-in and
// user-registered (custom) formats alike.
//
// A parser does no I/O of its own beyond asking its ByteSource for byte ranges (and, for
// formats with companion files such as ONNX external data, asking `open_sibling`), so the same
// parser serves local files, memory and remote objects. It must treat its input as hostile:
// bound every size and count by `limits`, check every offset and product for overflow, and
// throw Error(invalid_format | limit_exceeded | unsupported) naming the byte offset. It never
// reads tensor data. After `parse`, the loader validates every entry once more (bounds of
// each view inside its ByteSource), so a custom parser cannot hand out-of-range views to it.
// Parsers are shared between threads: `probe` and `parse` must be const and thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ballast/byte_source.hpp"
#include "ballast/dtype.hpp"
#include "ballast/format.hpp"
#include "ballast/limits.hpp"
#include "ballast/metadata_value.hpp"
#include "ballast/source.hpp"
#include "ballast/tensor.hpp"

namespace ballast {

enum class ByteOrder : uint8_t { little, big };

// Where one tensor's bytes are and how to walk them.
struct TensorEntry {
  std::string name;
  DType dtype = DType::u8;
  Shape shape;                       // row-major, outermost first
  std::shared_ptr<ByteSource> data;  // the file, member or buffer that holds the bytes
  uint64_t offset = 0;               // byte offset of element 0 inside `data`
  std::vector<int64_t> strides;      // in elements, one per dim; empty = C-contiguous
  ByteOrder byte_order = ByteOrder::little;

  uint64_t numel() const;      // product of shape (0 for an empty tensor, 1 for a scalar)
  uint64_t nbytes() const;     // logical contiguous size in `dtype`
  bool is_contiguous() const;  // strides empty or equal to the row-major strides
};

struct Index {
  WeightFormat format;
  std::vector<TensorEntry> tensors;
  std::string extra = "{}";  // JSON object text (format metadata)
  // The same metadata as typed values, for a format whose types JSON cannot tell (GGUF's u32
  // from its i32, f32 from f64); null when `extra` says all (the values are read from it).
  MetadataValue extra_values;
};

// Opens a file next to the one being parsed, by a path relative to its folder. It refuses
// absolute paths, `..` and symlinks that leave the folder (Error invalid_format) and throws
// not_found for missing files. Null when the source has no folder (bytes in memory).
using SiblingOpener = std::function<std::shared_ptr<ByteSource>(std::string_view relative_path)>;

struct ParseContext {
  std::shared_ptr<ByteSource> source;
  Limits limits;
  SiblingOpener open_sibling;
  std::optional<RawLayout> raw_layout;  // the caller's layout for headerless formats
  // Verify checksums a format records for companion files (ONNX external data), reading those
  // files whole once at parse time. Set from WeightLoaderConfig::enable_integrity_checks.
  bool verify_checksums = true;
};

class FormatParser {
 public:
  virtual ~FormatParser() = default;
  virtual WeightFormat format() const = 0;
  // File name endings this format uses (".safetensors"), a hint only: detection is by content.
  virtual std::vector<std::string> extensions() const { return {}; }
  // Does `head` (the first min(size, kProbeBytes) bytes of a `total_size`-byte source) look
  // like this format? Must be cheap and never throw.
  virtual bool probe(std::span<const std::byte> head, uint64_t total_size) const = 0;
  virtual Index parse(const ParseContext& context) const = 0;
};

inline constexpr size_t kProbeBytes = 4096;

// Registers (or replaces, for the same format) a parser. Thread-safe; built-in formats are
// registered the same way.
void register_format_parser(std::shared_ptr<const FormatParser> parser);
std::shared_ptr<const FormatParser> find_format_parser(const WeightFormat& format);
std::vector<std::shared_ptr<const FormatParser>> registered_format_parsers();

}  // namespace ballast
