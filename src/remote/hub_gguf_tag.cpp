// GGUF quantization tags (see hub_gguf_tag.hpp).
#include "remote/hub_gguf_tag.hpp"

#include <algorithm>
#include <cctype>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ballast/error.hpp"
#include "formats/gguf/gguf_split.hpp"

namespace ballast {
namespace {

constexpr size_t kMaxTagsShown = 64;

std::string upper(std::string_view text) {
  std::string out(text);
  std::ranges::transform(out, out.begin(),
                         [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return out;
}

bool is_model_gguf(const std::string& path) {
  const std::string name = upper(path);
  return name.ends_with(".GGUF") && name.find("MMPROJ") == std::string::npos;
}

// Whether the path, without its .gguf extension, holds the (uppercase) tag between separators.
bool tag_in(const std::string& path, const std::string& tag) {
  const std::string name = upper(path.substr(0, path.size() - 5));
  auto before_ok = [](char c) { return c == '/' || c == '-' || c == '.' || c == '_'; };
  auto after_ok = [](char c) { return c == '/' || c == '-' || c == '.'; };
  for (size_t at = name.find(tag); at != std::string::npos; at = name.find(tag, at + 1)) {
    const size_t end = at + tag.size();
    if ((at == 0 || before_ok(name[at - 1])) && (end == name.size() || after_ok(name[end])))
      return true;
  }
  return false;
}

// The tag a .gguf file carries: the last '-' or '.' separated part of its name, the extension
// and a split suffix removed ("m-UD-Q4_K_XL-00001-of-00002.gguf" -> "Q4_K_XL").
std::string tag_of(const std::string& path) {
  std::string stem = path.substr(path.rfind('/') + 1);
  if (auto split = parse_gguf_split_name(stem)) stem = split->prefix;
  if (upper(stem).ends_with(".GGUF")) stem.resize(stem.size() - 5);
  const size_t cut = stem.find_last_of("-.");
  return upper(cut == std::string::npos ? stem : stem.substr(cut + 1));
}

}  // namespace

std::vector<std::string> gguf_files_for_tag(const std::vector<std::string>& files,
                                            std::string_view tag, const std::string& where) {
  std::vector<std::string> models;
  std::ranges::copy_if(files, std::back_inserter(models), is_model_gguf);
  std::ranges::sort(models);
  const std::string wanted = upper(tag);
  auto match = std::ranges::find_if(models, [&](const auto& p) { return tag_in(p, wanted); });
  if (match == models.end()) {
    std::set<std::string> tags;
    for (const auto& p : models)
      if (tags.size() < kMaxTagsShown) tags.insert(tag_of(p));
    throw Error(ErrorCode::not_found,
                models.empty() ? fmt::format("no .gguf file matches the quantization tag '{}': the "
                                             "repository has no .gguf model files",
                                             tag)
                               : fmt::format("no .gguf file matches the quantization tag '{}'; the "
                                             "repository's tags: {}",
                                             tag, fmt::join(tags, ", ")),
                {.source = where});
  }
  std::vector<std::string> set = gguf_split_siblings(*match);
  if (set.empty()) return {*match};
  std::vector<std::string> missing;
  for (const auto& part : set)
    if (!std::ranges::binary_search(models, part)) missing.push_back(part);
  if (!missing.empty())
    throw Error(ErrorCode::not_found,
                fmt::format("the GGUF split set of '{}' misses {} of its {} parts, the first {}",
                            *match, missing.size(), set.size(), missing.front()),
                {.source = where});
  return set;
}

}  // namespace ballast
