// Parses a source named by one string (see ballast/source_uri.hpp).
#include "ballast/source_uri.hpp"

#include "ballast/error.hpp"

namespace ballast {
namespace {

WeightSource hub_source(std::string_view rest) {
  // org/repo[@rev][/path]
  size_t first_slash = rest.find('/');
  if (first_slash == std::string_view::npos)
    throw Error(ErrorCode::invalid_argument, "hf:// sources look like hf://org/repo[@rev][/path]");
  size_t second_slash = rest.find('/', first_slash + 1);
  std::string_view repo = rest.substr(0, second_slash);
  std::string filename =
      second_slash == std::string_view::npos ? "" : std::string(rest.substr(second_slash + 1));
  std::optional<std::string> revision;
  if (size_t at = repo.find('@'); at != std::string_view::npos) {
    revision = std::string(repo.substr(at + 1));
    repo = repo.substr(0, at);
  }
  return WeightSource::hugging_face(std::string(repo), filename, revision);
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
