// The profile's `credential_process`: the command runs through /bin/sh with stdin from
// /dev/null and the caller's stderr; its stdout must be the Version 1 JSON document
// ({"Version": 1, "AccessKeyId", "SecretAccessKey", "SessionToken"?, "Expiration"?}). The
// output is bounded (kMaxAwsAnswerBytes) and so is the time: one deadline
// (kCredentialProcessTimeout) for the output and the exit; the process, in a process group of
// its own, is killed with its children at it, also when it has printed its document and closed
// its stdout but not exited. Neither the command line nor the output ever reaches a message.
#pragma once

#include <chrono>
#include <string>

#include "remote/aws_credentials.hpp"

namespace ballast {

inline constexpr std::chrono::seconds kCredentialProcessTimeout{60};

// Throws Error(auth) naming `provider` when the process fails, exits non-zero, runs too long
// or prints something else than the document.
AwsCredentials run_credential_process(
    const std::string& command, const std::string& provider,
    std::chrono::milliseconds timeout = kCredentialProcessTimeout);

}  // namespace ballast
