// --include / --exclude for Hub downloads, with huggingface_hub's filter_repo_objects rules
// (snapshot_download's allow_patterns / ignore_patterns): fnmatch globs matched against the
// whole repo path, case-sensitively, '*' crossing '/', '\' a path separator rather than an
// escape, and a pattern ending in '/' meaning everything under that folder.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ballast {

// Whether `path` is fetched: it matches one `include` pattern (any path when there are none)
// and no `exclude` pattern.
bool hub_path_selected(std::string_view path, const std::vector<std::string>& include,
                       const std::vector<std::string>& exclude);

}  // namespace ballast
