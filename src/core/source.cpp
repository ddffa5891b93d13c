// WeightSource constructors and descriptions.
#include "ballast/source.hpp"

#include <cstring>

#include <fmt/format.h>

#include "util/redact_url.hpp"

namespace ballast {

MemorySource MemorySource::copy_of(std::span<const std::byte> bytes,
                                   std::optional<WeightFormat> format) {
  auto owned = std::make_shared<std::vector<std::byte>>(bytes.begin(), bytes.end());
  MemorySource m;
  m.bytes = std::span<const std::byte>(owned->data(), owned->size());
  m.owner = owned;
  m.format = std::move(format);
  return m;
}

WeightSource WeightSource::file(std::filesystem::path path,
                                std::optional<std::string> tensor_name) {
  return {FileSource{std::move(path), std::move(tensor_name)}, std::nullopt, std::nullopt};
}

WeightSource WeightSource::url(std::string url, std::map<std::string, std::string> headers) {
  return {UrlSource{std::move(url), std::move(headers)}, std::nullopt, std::nullopt};
}

WeightSource WeightSource::hugging_face(std::string repo_id, std::string filename,
                                        std::optional<std::string> revision,
                                        std::optional<std::filesystem::path> cache_dir) {
  return {HuggingFaceSource{std::move(repo_id), std::move(filename), std::move(revision),
                            std::move(cache_dir)},
          std::nullopt, std::nullopt};
}

WeightSource WeightSource::memory(MemorySource memory) {
  std::optional<WeightFormat> format = memory.format;
  return {std::move(memory), std::move(format), std::nullopt};
}

WeightSource WeightSource::s3(std::string bucket, std::string key,
                              std::optional<std::string> region,
                              std::optional<std::string> endpoint) {
  return {S3Source{std::move(bucket), std::move(key), std::move(region), std::move(endpoint)},
          std::nullopt, std::nullopt};
}

std::string describe(const WeightSource& source) {
  struct Describe {
    std::string operator()(const FileSource& f) const {
      return f.tensor_name ? fmt::format("{}#{}", f.path.string(), *f.tensor_name)
                           : f.path.string();
    }
    std::string operator()(const UrlSource& u) const { return redact_url(u.url); }
    std::string operator()(const HuggingFaceSource& h) const {
      std::string s = "hf://" + h.repo_id;
      if (!h.quant_tag.empty()) s += ":" + h.quant_tag;
      if (h.revision) s += "@" + *h.revision;
      if (!h.filename.empty()) s += "/" + h.filename;
      return s;
    }
    std::string operator()(const MemorySource& m) const {
      return fmt::format("memory({} bytes)", m.bytes.size());
    }
    std::string operator()(const S3Source& s) const {
      return fmt::format("s3://{}/{}", s.bucket, s.key);
    }
  };
  return std::visit(Describe{}, source.location);
}

}  // namespace ballast
