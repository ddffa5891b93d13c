// Hub errors from X-Error-Code (see hub_errors.hpp).
#include "remote/hub_errors.hpp"

#include <fmt/format.h>

#include "ballast/error.hpp"

namespace ballast {
namespace {

constexpr size_t kMaxShownMessageChars = 200;

// The Hub's X-Error-Message, printable ASCII only and bounded: it comes from the server.
std::string server_message(const HttpResponse& response) {
  const std::string* message = response.header("x-error-message");
  if (message == nullptr) return "";
  std::string shown;
  for (char c : *message) {
    if (shown.size() == kMaxShownMessageChars) break;
    shown += c >= 0x20 && c < 0x7f ? c : '?';
  }
  return shown.empty() ? "" : fmt::format(" (\"{}\")", shown);
}

constexpr const char* kLogIn = "set HF_TOKEN or run `hf auth login`";

}  // namespace

void throw_hub_error(const HttpResult& result, const std::string& where, bool have_token) {
  if (result.curl_code != 0 || !result.refused.empty()) throw_http_error(result, where);
  const long status = result.response.status;
  const std::string* header = result.response.header("x-error-code");
  const std::string code = header ? *header : "";
  const std::string http = fmt::format("HTTP {}{}{}", status, code.empty() ? "" : ", " + code,
                                       server_message(result.response));
  auto fail = [&](ErrorCode error, std::string_view what) {
    throw Error(error, fmt::format("{} ({})", what, http), {.source = where});
  };
  if (code == "RevisionNotFound")
    fail(ErrorCode::not_found,
         "revision not found: the repository has no such branch, tag or commit");
  if (code == "EntryNotFound")
    fail(ErrorCode::not_found, "file not found: the repository has no such file at this revision");
  if (code == "GatedRepo")
    fail(ErrorCode::auth,
         have_token ? "gated repository: the token's account has not been granted access; accept "
                      "the conditions on the repository's Hub page"
                    : fmt::format("gated repository: accept the conditions on its Hub page, then "
                                  "{}",
                                  kLogIn));
  if (status == 401)
    fail(ErrorCode::auth,
         have_token ? "repository not found, or private or gated and the token (HF_TOKEN or "
                      "the token file) has no access or is invalid"
                    : fmt::format("repository not found, or private or gated: to use a private "
                                  "or gated repository, {}",
                                  kLogIn));
  if (status == 403)
    fail(ErrorCode::auth, have_token ? "access denied: the token lacks permission for this "
                                       "repository"
                                     : fmt::format("access denied: {}", kLogIn));
  if (code == "RepoNotFound")
    fail(ErrorCode::not_found,
         have_token ? "repository not found: check the repo id (or the token has no access)"
                    : fmt::format("repository not found: check the repo id; a private repository "
                                  "needs a token ({})",
                                  kLogIn));
  throw_http_error(result, where);
}

}  // namespace ballast
