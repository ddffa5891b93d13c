// Hub errors that say what is wrong and what to do, from the Hub's X-Error-Code header as
// huggingface_hub reads it: RepoNotFound, RevisionNotFound, EntryNotFound, GatedRepo, and a 401
// or 403 (a private or gated repository without a token, or a token without access).
#pragma once

#include <string>

#include "remote/http_client.hpp"

namespace ballast {

// Throws the Error for a failed Hub request: not_found for a missing repository, revision or
// file; auth with the hint to set HF_TOKEN or run `hf auth login` for a gated or private one
// (`have_token`: whether the request carried a token); throw_http_error's otherwise (network).
// `where` names the object (hf://...); the token is never part of the message.
[[noreturn]] void throw_hub_error(const HttpResult& result, const std::string& where,
                                  bool have_token);

}  // namespace ballast
