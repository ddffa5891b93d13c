// The profile's `credential_process`: the command runs through /bin/sh with stdin from
// /dev/null and the caller's stderr; its stdout must be the Version 1 JSON document
// ({"Version": 1, "AccessKeyId", "SecretAccessKey", "SessionToken"?, "Expiration"?}). The
// output is bounded (kMaxAwsAnswerBytes) and so is the time (kCredentialProcessSeconds: the
// process, in a process group of its own, is killed with its children after it). Neither the
// command line nor the output ever reaches a message.
#pragma once

#include <string>

#include "remote/aws_credentials.hpp"

namespace ballast {

inline constexpr int kCredentialProcessSeconds = 60;

// Throws Error(auth) naming `provider` when the process fails, exits non-zero, runs too long
// or prints something else than the document.
AwsCredentials run_credential_process(const std::string& command, const std::string& provider,
                                      int timeout_seconds = kCredentialProcessSeconds);

}  // namespace ballast
