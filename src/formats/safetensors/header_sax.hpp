// The safetensors JSON header read in one SAX pass, straight into per-tensor fields, without
// building a DOM. A DOM costs a heap node per key, value and array element (about 600 bytes
// per tensor entry); on a checkpoint of thousands of small tensors those fresh pages were a
// third of the page faults of a whole load. The pass bounds the nesting depth and the numbers
// kept per array, and reports problems in a fixed precedence: a syntax or depth error anywhere
// wins over a problem in the content, which is the first one met.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ballast {

// One tensor's fields as the header spells them, for the caller to check. Reused between
// entries (the caller may move `name` out).
struct RawHeaderEntry {
  struct Numbers {
    bool present = false;        // the key exists and holds an array
    uint64_t count = 0;          // elements in the array
    bool all_unsigned = true;    // every element is a non-negative integer
    std::vector<uint64_t> kept;  // the first elements, up to HeaderSaxLimits::max_kept_numbers

    // Back to "absent", keeping kept's capacity for the next entry.
    void clear() {
      present = false;
      count = 0;
      all_unsigned = true;
      kept.clear();
    }
  };
  std::string name;
  std::optional<std::string> dtype;  // set when "dtype" is a string
  Numbers shape, data_offsets;
};

struct HeaderSaxLimits {
  uint32_t max_depth = 64;         // containers open at once, the top level counting as one
  uint32_t max_kept_numbers = 65;  // elements kept per array (the rest are only counted)
  uint64_t base_offset = 0;        // where the text starts in the file, for error offsets
};

// Called at the end of each tensor entry; throws ballast::Error to refuse it.
using RawEntrySink = std::function<void(RawHeaderEntry&)>;

// Reads `text`: the top level must be an object, "__metadata__" (at most once) must map
// strings to strings, and every other key names a tensor whose value is an object. Returns
// the __metadata__ object re-serialized ("{}" when absent). Throws ballast::Error without a
// source (the caller adds it).
std::string read_safetensors_header(std::string_view text, const HeaderSaxLimits& limits,
                                    const RawEntrySink& on_entry);

}  // namespace ballast
