// GGUF quantization tags, as llama.cpp's `-hf repo:QUANT` takes them: the tag is matched,
// case-insensitively, against the paths of the repository's .gguf files (mmproj files, the
// multimodal projectors, are not models and never match). It matches where it stands between
// separators: the start or '/', '-', '.', '_' before it, and '-', '.', '/' or the end after it,
// so Q4_K matches neither Q4_K_M nor IQ4_K. The first match in path order wins; when it is a
// split file (NAME-00001-of-0000N.gguf) the whole split set is taken, every part of which must
// be listed.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ballast {

// The .gguf file, or the split set's parts in order, that `tag` names among `files` (the
// repository's paths). Throws not_found when nothing matches, listing the tags the repository
// has (the last '-' or '.' separated part of each .gguf name), and when a split set misses
// parts. `where` names the repository in errors.
std::vector<std::string> gguf_files_for_tag(const std::vector<std::string>& files,
                                            std::string_view tag, const std::string& where);

}  // namespace ballast
