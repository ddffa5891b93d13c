// AWS credentials as the providers of the default chain give them: a key pair, an optional
// session token and expiration, and where they came from (for messages, never a secret). The
// providers' answers are untrusted: the JSON documents (credential_process, container, IMDS)
// and timestamps are parsed here with bounded fields.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace ballast {

using AwsClock = std::chrono::system_clock;

struct AwsCredentials {
  std::string access_key;
  std::string secret_key;                          // secret: never printed
  std::string session_token;                       // secret: never printed; empty when none
  std::optional<AwsClock::time_point> expiration;  // nullopt: they do not expire
};

// An ISO 8601 UTC time as AWS writes it ("2026-12-07T12:00:00Z", fractions of a second and a
// "+00:00" offset allowed); nullopt for anything else.
std::optional<AwsClock::time_point> parse_aws_time(std::string_view text);

// Credentials from a JSON object with the fields AccessKeyId, SecretAccessKey, `token_field`
// (optional) and Expiration (optional, ISO 8601). Throws Error(auth) naming `provider` when
// the document is not such an object; the message never quotes the document.
AwsCredentials aws_credentials_from_json(std::string_view document, const std::string& provider,
                                         const char* token_field);

// Error(auth) naming `provider` (never the value) when the key pair is incomplete, a field
// holds a control character (CR, LF, ...) or the credentials have already expired. Every
// provider's credentials pass here (AwsCredentialProvider), whatever their source.
void check_aws_credentials(const AwsCredentials& credentials, const std::string& provider);

}  // namespace ballast
