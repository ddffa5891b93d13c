// Folder-confined path resolution (see folder_opener.hpp).
#include "io/folder_opener.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "ballast/error.hpp"

namespace ballast {
namespace {

bool lies_under(const std::filesystem::path& path, const std::filesystem::path& prefix) {
  auto [prefix_end, rest] = std::mismatch(prefix.begin(), prefix.end(), path.begin(), path.end());
  return prefix_end == prefix.end() && rest != path.end();
}

// Where a name taken from `base` (canonical) may resolve: `base`, and when `base` lies in a
// Hugging Face cache snapshot (<repo>/snapshots/<commit>[/...]), <repo>/blobs as well.
std::vector<std::filesystem::path> allowed_roots(const std::filesystem::path& base) {
  std::vector<std::filesystem::path> roots{base};
  for (auto p = base; p.has_relative_path() && p.parent_path() != p; p = p.parent_path()) {
    if (p.parent_path().filename() == "snapshots") {
      roots.push_back(p.parent_path().parent_path() / "blobs");
      break;
    }
  }
  return roots;
}

}  // namespace

std::filesystem::path resolve_inside(const std::filesystem::path& folder, std::string_view relative,
                                     const Os& os) {
  const std::string where = folder.string();
  auto refuse = [&](std::string_view why) -> std::filesystem::path {
    throw Error(ErrorCode::invalid_format, fmt::format("refusing path '{}': {}", relative, why),
                {.source = where});
  };
  if (relative.empty()) return refuse("empty path");
  if (relative.find('\0') != std::string_view::npos) return refuse("NUL in path");
  if (relative.find('\\') != std::string_view::npos) return refuse("backslash in path");
  std::filesystem::path rel(relative);
  if (rel.is_absolute() || rel.has_root_name() || rel.has_root_directory())
    return refuse("absolute paths are not allowed");
  for (const auto& part : rel)
    if (part == "..") return refuse("'..' would leave the model folder");

  const auto base = os.canonical(folder);
  if (!base) throw Error(ErrorCode::not_found, "model folder does not exist", {.source = where});
  const auto target = *base / rel;
  struct stat st {};
  if (os.stat(target.c_str(), &st) != 0)
    throw Error(ErrorCode::not_found, fmt::format("file '{}' does not exist", relative),
                {.source = where});
  const auto resolved = os.canonical(target);
  if (!resolved)
    throw Error(ErrorCode::io, fmt::format("cannot resolve '{}'", relative), {.source = where});
  for (const auto& root : allowed_roots(*base))
    if (lies_under(*resolved, root)) return *resolved;
  return refuse("it resolves (through a symlink) outside the model folder");
}

SiblingOpener make_folder_opener(std::filesystem::path folder, FileOpenOptions options) {
  return [folder = std::move(folder), options](std::string_view relative) {
    return open_file_source(resolve_inside(folder, relative, *options.os), options);
  };
}

}  // namespace ballast
