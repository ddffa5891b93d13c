// Format detection by content (see detect.hpp).
#include "formats/detect.hpp"

#include <algorithm>
#include <vector>

#include "ballast/error.hpp"

namespace ballast {

std::shared_ptr<const FormatParser> detect_format(const ByteSource& source) {
  std::vector<std::byte> head(std::min<uint64_t>(source.size(), kProbeBytes));
  source.read_at(0, head);
  std::string tried;
  for (const auto& parser : registered_format_parsers()) {
    if (parser->probe(head, source.size())) return parser;
    if (parser->format().kind == WeightFormat::Kind::raw) continue;
    tried += tried.empty() ? "" : ", ";
    tried += to_string(parser->format());
  }
  throw Error(ErrorCode::invalid_format,
              "unrecognised file format (tried " + tried +
                  "; a headerless file needs --format raw with --dtype and --shape)",
              {.source = source.name()});
}

}  // namespace ballast
