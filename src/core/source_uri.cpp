// Parses a source named by one string (see ballast/source_uri.hpp).
#include "ballast/source_uri.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "ballast/error.hpp"

namespace ballast {
namespace {

constexpr size_t kMaxRepoNameChars = 96;  // huggingface_hub's validate_repo_id

[[noreturn]] void bad_hub_name(std::string_view text, std::string_view why) {
  throw Error(ErrorCode::invalid_argument,
              fmt::format("bad hf:// source 'hf://{}': {}; hf:// sources look like "
                          "hf://[org/]name[:QUANT][@revision][/path]",
                          text, why));
}

// An organisation or repository name as the Hub allows it (huggingface_hub's validate_repo_id):
// letters, digits, '-', '_' and '.', neither "--" nor "..", not starting or ending with '-' or
// '.'.
bool valid_repo_part(std::string_view part) {
  if (part.empty() || part.size() > kMaxRepoNameChars) return false;
  if (part.find("--") != std::string_view::npos || part.find("..") != std::string_view::npos)
    return false;
  for (char c : {part.front(), part.back()})
    if (c == '-' || c == '.') return false;
  return std::ranges::all_of(part, [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

// A quantization tag: what llama.cpp's file names carry (Q4_K_M, UD-Q4_K_XL, IQ4_XS, BF16).
bool valid_quant_tag(std::string_view tag) {
  return !tag.empty() && tag.size() <= 64 && std::ranges::all_of(tag, [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

// [org/]name[:TAG][@rev][/path]. A name without an organisation ("gpt2") is the whole text or
// the part before the first '/' when that part holds '@' or ':' (hf://gpt2@main/config.json);
// otherwise the first two parts are org/name. The tag may also follow the revision
// (name@rev:TAG): neither git refs nor repo names hold ':'.
WeightSource hub_source(std::string_view text) {
  const size_t first = text.find('/');
  const std::string_view head = text.substr(0, first);
  const bool no_org =
      first == std::string_view::npos || head.find_first_of("@:") != std::string_view::npos;
  const size_t name_end = no_org ? first : text.find('/', first + 1);
  std::string_view org = no_org ? std::string_view() : head;
  std::string_view name = no_org ? head : text.substr(first + 1, name_end - first - 1);
  const std::string filename =
      name_end == std::string_view::npos ? "" : std::string(text.substr(name_end + 1));
  std::optional<std::string> revision;
  std::string_view tag;
  if (size_t at = name.find('@'); at != std::string_view::npos) {
    std::string_view rev = name.substr(at + 1);
    name = name.substr(0, at);
    if (size_t colon = rev.find(':'); colon != std::string_view::npos) {
      tag = rev.substr(colon + 1);
      rev = rev.substr(0, colon);
    }
    if (rev.empty()) bad_hub_name(text, "the revision after '@' is empty");
    revision = std::string(rev);
  }
  if (size_t colon = name.find(':'); colon != std::string_view::npos) {
    if (!tag.empty()) bad_hub_name(text, "two quantization tags");
    tag = name.substr(colon + 1);
    name = name.substr(0, colon);
    if (tag.empty()) bad_hub_name(text, "the quantization tag after ':' is empty");
  }
  if ((!no_org && !valid_repo_part(org)) || !valid_repo_part(name))
    bad_hub_name(text, "a repository id is [org/]name of letters, digits, '-', '_' and '.'");
  if (!tag.empty() && !valid_quant_tag(tag))
    bad_hub_name(text, "a quantization tag is letters, digits, '-', '_' and '.'");
  if (!tag.empty() && !filename.empty())
    bad_hub_name(text, "a quantization tag picks the .gguf files itself; give :QUANT or /path");
  const std::string repo = no_org ? std::string(name) : fmt::format("{}/{}", org, name);
  WeightSource source = WeightSource::hugging_face(repo, filename, revision);
  std::get<HuggingFaceSource>(source.location).quant_tag = std::string(tag);
  return source;
}

WeightSource s3_source(std::string_view rest, std::optional<std::string> region,
                       std::optional<std::string> endpoint) {
  size_t slash = rest.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == rest.size())
    throw Error(ErrorCode::invalid_argument, "s3:// sources look like s3://bucket/key");
  return WeightSource::s3(std::string(rest.substr(0, slash)), std::string(rest.substr(slash + 1)),
                          std::move(region), std::move(endpoint));
}

}  // namespace

WeightSource parse_source_uri(std::string_view text, std::optional<std::string> s3_region,
                              std::optional<std::string> s3_endpoint) {
  if (text.starts_with("s3://"))
    return s3_source(text.substr(5), std::move(s3_region), std::move(s3_endpoint));
  WeightSource source;
  if (text.starts_with("http://") || text.starts_with("https://"))
    source = WeightSource::url(std::string(text));
  else if (text.starts_with("hf://"))
    source = hub_source(text.substr(5));
  else
    source = WeightSource::file(std::string(text));
  if (s3_region || s3_endpoint)
    throw Error(ErrorCode::invalid_argument,
                "--s3-endpoint and --s3-region apply only to s3:// sources");
  return source;
}

}  // namespace ballast
