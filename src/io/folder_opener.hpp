// A SiblingOpener confined to one folder: relative paths only, no `..`, and no symlink that
// resolves outside the folder. This is the single place that enforces "never follow a path out
// of the model's folder" for local files (ONNX external data, shard indexes, split files).
// One layout is the user's own and not a file's say: in a Hugging Face cache snapshot
// (<repo>/snapshots/<commit>/...), whose files are symlinks into <repo>/blobs/, a name may
// resolve into that blobs folder too.
#pragma once

#include <filesystem>

#include "ballast/parser.hpp"
#include "io/file_source.hpp"

namespace ballast {

// Resolves `relative` inside `folder` (or, for a Hub snapshot, its repo's blobs folder) through
// `os`; throws Error(invalid_format) for an escape and Error(not_found) when the file is missing.
std::filesystem::path resolve_inside(const std::filesystem::path& folder, std::string_view relative,
                                     const Os& os);

// Opens files inside `folder` with `options` (and through its Os).
SiblingOpener make_folder_opener(std::filesystem::path folder, FileOpenOptions options);

}  // namespace ballast
