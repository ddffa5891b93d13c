// Hostile-input tests' way of "loading" a file: parse its bytes (held in memory) with one
// parser, then read every tensor's whole ByteSource, as a load would. Header-only, test use.
#pragma once

#include <string>
#include <vector>

#include "ballast/parser.hpp"

namespace ballast::test {

inline std::shared_ptr<ByteSource> memory_source_of(const std::string& bytes,
                                                    const std::string& name) {
  return make_memory_source(
      std::vector<std::byte>(reinterpret_cast<const std::byte*>(bytes.data()),
                             reinterpret_cast<const std::byte*>(bytes.data()) + bytes.size()),
      name);
}

inline void parse_and_read(const FormatParser& parser, const std::string& bytes,
                           const Limits& limits, const std::string& name) {
  ParseContext ctx{.source = memory_source_of(bytes, name), .limits = limits};
  Index index = parser.parse(ctx);
  for (const auto& e : index.tensors) {
    std::vector<std::byte> all(e.data->size());
    e.data->read_at(0, all);
  }
}

}  // namespace ballast::test
