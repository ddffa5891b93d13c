// AwsCredentialProvider: the credentials one provider of the chain gave, handed to every signed
// request and fetched again shortly before they expire, as the AWS SDKs do: less than
// kAwsRefreshBefore left and the next request asks the provider again; if that fails while the
// old ones are still valid they are used on, once expired the failure is the request's error.
// So a load that outlives one set of temporary credentials keeps working. Whatever a provider
// gives (a fetch or fixed keys from the environment or a file) is checked before it is used: a
// control character in a field is Error(auth) naming the provider. Thread-safe.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <string>

#include "remote/aws_credentials.hpp"

namespace ballast {

inline constexpr std::chrono::minutes kAwsRefreshBefore{5};

class AwsCredentialProvider {
 public:
  using Fetch = std::function<AwsCredentials()>;

  // `description` says where the credentials come from ("web identity (role arn:...)"), for
  // messages; `fetch` asks the provider (throws Error naming it). Fetches once now.
  AwsCredentialProvider(std::string description, Fetch fetch);
  // Long-term credentials: never fetched again.
  AwsCredentialProvider(std::string description, AwsCredentials fixed);

  AwsCredentials current();
  const std::string& description() const { return description_; }

 private:
  // The credentials after check_aws_credentials (Error(auth) naming the description).
  AwsCredentials checked(AwsCredentials credentials) const;

  std::string description_;
  Fetch fetch_;
  std::mutex mutex_;
  AwsCredentials credentials_;
};

}  // namespace ballast
