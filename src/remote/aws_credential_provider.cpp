// Credentials refreshed before they expire (see aws_credential_provider.hpp).
#include "remote/aws_credential_provider.hpp"

#include "ballast/error.hpp"

namespace ballast {

AwsCredentialProvider::AwsCredentialProvider(std::string description, Fetch fetch)
    : description_(std::move(description)),
      fetch_(std::move(fetch)),
      credentials_(checked(fetch_())) {}

AwsCredentialProvider::AwsCredentialProvider(std::string description, AwsCredentials fixed)
    : description_(std::move(description)), credentials_(checked(std::move(fixed))) {}

AwsCredentials AwsCredentialProvider::checked(AwsCredentials credentials) const {
  check_aws_credentials(credentials, description_);
  return credentials;
}

AwsCredentials AwsCredentialProvider::current() {
  std::lock_guard lock(mutex_);
  const auto& expiration = credentials_.expiration;
  if (!fetch_ || !expiration || AwsClock::now() + kAwsRefreshBefore < *expiration)
    return credentials_;
  try {
    credentials_ = checked(fetch_());
  } catch (const Error&) {
    if (AwsClock::now() >= *expiration) throw;  // still valid: used until they expire
  }
  return credentials_;
}

}  // namespace ballast
