// URL helpers for remote sources (redaction is util/redact_url.hpp): confined resolution of shard
// and sibling names relative to a URL, percent-encoding, and the path part of a URL.
#pragma once

#include <string>
#include <string_view>

namespace ballast {

// The path of `url` without query or fragment ("/a/b.safetensors").
std::string url_path(std::string_view url);

// `relative` resolved against the folder of `base` (query and fragment of `base` dropped).
// Refuses, with Error(invalid_format), names that could leave that folder: empty, absolute,
// with a scheme, `..`, backslashes, NUL, `?` or `#`.
std::string resolve_relative_url(std::string_view base, std::string_view relative);

// `relative` as a path confined to its folder: "." segments dropped, everything
// resolve_relative_url refuses refused the same way (`where` names the folder in errors).
std::string confined_relative_path(std::string_view relative, std::string_view where);

// Percent-encodes everything but unreserved characters (and '/' when keep_slash).
std::string url_quote(std::string_view text, bool keep_slash);

}  // namespace ballast
