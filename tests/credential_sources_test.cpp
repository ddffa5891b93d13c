// Credential sources are as untrusted as servers (issue 37): a control character in a key,
// secret or token from any provider (instance metadata and the container endpoint through
// tests/servers/aws_credentials_server.py, credential_process, the environment, the shared
// files, the SSO token cache, an STS answer, the Hugging Face token sources) is an auth error
// naming the provider, never the value, and never reaches a request; a credential_process that
// prints its document and keeps running is killed, with its process group, at its deadline; a
// password in any endpoint variable is redacted in every error.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <chrono>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "ballast/ballast.hpp"
#include "remote/aws_credential_chain.hpp"
#include "remote/aws_credential_process.hpp"
#include "remote/aws_http.hpp"
#include "remote/aws_sso.hpp"
#include "remote/hub_settings.hpp"
#include "remote/s3_settings.hpp"
#include "support/aws_environment.hpp"
#include "support/process.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

// A value that would add a header of its own if it reached a request.
constexpr const char* kInjected = "X-Injected: yes";
const std::string kBadToken = std::string("session-token\r\n") + kInjected;

// tests/servers/aws_credentials_server.py handing out a key pair whose session token holds
// CR LF and a header line.
class InjectingStandIn {
 public:
  InjectingStandIn()
      : process_({kDebianPython, BALLAST_SOURCE_DIR "/tests/servers/aws_credentials_server.py",
                  "AKIAINJECTED:injected-secret:" + kBadToken, "caller-secret"}) {
    if (auto line = process_.read_line(std::chrono::seconds(30)))
      std::istringstream(*line) >> port_;
  }
  bool available() const { return port_ != 0; }
  std::string url(const std::string& path = "") const {
    return fmt::format("http://127.0.0.1:{}{}", port_, path);
  }

 private:
  Process process_;
  int port_ = 0;
};

class CredentialSourcesTest : public AwsIsolatedTest {
 protected:
  std::shared_ptr<AwsCredentialProvider> chain() {
    return aws_default_credentials(load_aws_profile(), "us-west-2", "s3://b/k");
  }

  // An auth error naming `provider` and quoting none of `secrets`.
  void expect_refused(const std::function<void()>& call, const std::string& provider,
                      const std::vector<std::string>& secrets) {
    const Error e = error_of(call);
    const std::string what = e.what();
    EXPECT_EQ(e.code(), ErrorCode::auth) << what;
    EXPECT_NE(what.find(provider), std::string::npos) << provider << ": " << what;
    EXPECT_NE(what.find("control character"), std::string::npos) << what;
    EXPECT_EQ(what.find(kInjected), std::string::npos) << what;
    for (const auto& secret : secrets) EXPECT_EQ(what.find(secret), std::string::npos) << what;
  }
};

TEST_F(CredentialSourcesTest, ControlCharactersFromInstanceMetadataAreAnAuthError) {
  InjectingStandIn stand_in;
  if (!stand_in.available()) BALLAST_MISSING("aws_credentials_server.py did not start");
  unsetenv("AWS_EC2_METADATA_DISABLED");
  setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", stand_in.url().c_str(), 1);
  expect_refused([&] { chain(); }, fmt::format("instance metadata ({})", stand_in.url()),
                 {"injected-secret", "session-token"});
}

TEST_F(CredentialSourcesTest, ControlCharactersFromTheContainerEndpointAreAnAuthError) {
  InjectingStandIn stand_in;
  if (!stand_in.available()) BALLAST_MISSING("aws_credentials_server.py did not start");
  setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", stand_in.url("/container/credentials").c_str(), 1);
  setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "caller-secret", 1);
  expect_refused([&] { chain(); }, "the container endpoint",
                 {"injected-secret", "session-token", "caller-secret"});
  // The authorization token the caller sends is checked the same way.
  setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "caller\x01secret", 1);
  expect_refused([&] { chain(); }, "the container endpoint", {"caller\x01secret"});
}

TEST_F(CredentialSourcesTest, ControlCharactersFromCredentialProcessAreAnAuthError) {
  write_file(home_ / "process.sh",
             "#!/bin/sh\ncat <<'JSON'\n{\"Version\": 1, \"AccessKeyId\": \"AKIAPROC\", "
             "\"SecretAccessKey\": \"process-secret\", \"SessionToken\": "
             "\"session-token\\r\\nX-Injected: yes\"}\nJSON\n");
  write_file(home_ / ".aws/config", "[default]\ncredential_process = /bin/sh " +
                                        shell_quote((home_ / "process.sh").string()) + "\n");
  expect_refused([&] { chain(); }, "credential_process of profile 'default'",
                 {"process-secret", "session-token"});
}

TEST_F(CredentialSourcesTest, ControlCharactersFromTheEnvironmentAreAnAuthError) {
  setenv("AWS_ACCESS_KEY_ID", "AKIAENV", 1);
  setenv("AWS_SECRET_ACCESS_KEY", "env-secret", 1);
  setenv("AWS_SESSION_TOKEN", kBadToken.c_str(), 1);
  expect_refused([&] { chain(); }, "the environment (AWS_ACCESS_KEY_ID)",
                 {"env-secret", "session-token"});
  unsetenv("AWS_SESSION_TOKEN");
  setenv("AWS_SECRET_ACCESS_KEY", "env-secret\nX-Injected: yes", 1);
  expect_refused([&] { chain(); }, "the environment (AWS_ACCESS_KEY_ID)", {"env-secret"});
  setenv("AWS_SECRET_ACCESS_KEY", "env-secret", 1);
  setenv("AWS_ACCESS_KEY_ID",
         "AKIA\x7f"
         "ENV",
         1);
  expect_refused([&] { chain(); }, "the environment (AWS_ACCESS_KEY_ID)", {"env-secret"});
}

TEST_F(CredentialSourcesTest, ControlCharactersFromTheProfileFilesAreAnAuthError) {
  // A file is read line by line: a CR inside a line, or any other control byte, stays.
  write_file(home_ / ".aws/credentials",
             "[default]\naws_access_key_id = AKIAFILE\n"
             "aws_secret_access_key = file-secret\rX-Injected: yes\n");
  expect_refused([&] { chain(); }, "profile 'default' in", {"file-secret"});
  write_file(home_ / ".aws/credentials", "");
  write_file(home_ / ".aws/config",
             "[default]\naws_access_key_id = AKIAFILE\naws_secret_access_key = file-secret\n"
             "aws_session_token = session-token\x01X-Injected: yes\n");
  expect_refused([&] { chain(); }, "profile 'default' in", {"file-secret", "session-token"});
}

TEST_F(CredentialSourcesTest, ControlCharactersFromSsoAndStsAreAnAuthError) {
  write_file(home_ / ".aws/config",
             "[default]\nsso_session = s\nsso_account_id = 123456789012\nsso_role_name = R\n"
             "[sso-session s]\nsso_region = eu-west-1\nsso_start_url = https://x/start\n");
  setenv("AWS_ENDPOINT_URL_SSO", "http://127.0.0.1:1", 1);  // never asked
  const auto sso = aws_sso_settings(load_aws_profile());
  ASSERT_TRUE(sso);
  write_file(aws_sso_cache_file(*sso),
             R"({"accessToken": "sso-bearer\r\nX-Injected: yes",
                 "expiresAt": "2200-01-01T00:00:00Z"})");
  expect_refused([&] { fetch_sso_credentials(*sso, "SSO (profile 'default')"); },
                 "SSO (profile 'default')", {"sso-bearer"});
  const std::string sts_answer =
      "<AssumeRoleResponse><AssumeRoleResult><Credentials><AccessKeyId>ASIASTS</AccessKeyId>"
      "<SecretAccessKey>sts-secret</SecretAccessKey><SessionToken>" +
      kBadToken +
      "</SessionToken><Expiration>2200-01-01T00:00:00Z</Expiration></Credentials>"
      "</AssumeRoleResult></AssumeRoleResponse>";
  expect_refused([&] { aws_sts_credentials(sts_answer, "the role r", "http://127.0.0.1:1"); },
                 "the role r", {"sts-secret", "session-token"});
}

TEST_F(CredentialSourcesTest, ControlCharactersInHuggingFaceTokensAreAnAuthError) {
  const TempDir hf;
  setenv("HF_HOME", hf.path().c_str(), 1);
  setenv("HF_TOKEN", "hf_secret\x01X-Injected: yes", 1);
  expect_refused([] { hub_settings_from_env(std::nullopt); }, "HF_TOKEN", {"hf_secret"});
  // What needs no token does not read it: `cache verify` still checks the (empty) caches.
  EXPECT_TRUE(verify_caches({.cache_dir = hf / "objects"}).empty());
  unsetenv("HF_TOKEN");
  // CR and LF are removed as huggingface_hub removes them; other control bytes are refused.
  write_file(hf / "token", "hf_secret\r\n");
  EXPECT_EQ(hub_settings_from_env(std::nullopt).token, "hf_secret");
  write_file(hf / "token", "hf_secret\x1bX-Injected: yes\n");
  expect_refused([] { hub_settings_from_env(std::nullopt); }, (hf / "token").string(),
                 {"hf_secret"});
  unsetenv("HF_HOME");
}

// Whether `pid` has ended: gone, or a zombie its new parent has not reaped yet.
bool process_ended(pid_t pid) {
  const std::string stat = read_file(fmt::format("/proc/{}/stat", pid));
  const size_t paren = stat.rfind(')');
  return stat.empty() || paren == std::string::npos || stat.substr(paren + 2, 1) == "Z";
}

TEST_F(CredentialSourcesTest, ACredentialProcessThatKeepsRunningIsKilledAtTheDeadline) {
  // The document, then stdout closed, a child in the background and the process going on.
  const auto pids = home_ / "pids";
  const std::string command = fmt::format(
      "echo $$ > {0}; sleep 30 > /dev/null & echo $! >> {0}; "
      "echo '{{\"Version\": 1, \"AccessKeyId\": \"A\", \"SecretAccessKey\": \"s\"}}'; "
      "exec >&-; sleep 30",
      shell_quote(pids.string()));
  const Error e = error_of([&] {
    run_credential_process(command, "credential_process of test", std::chrono::seconds(2));
  });
  EXPECT_EQ(e.code(), ErrorCode::auth) << e.what();
  EXPECT_NE(std::string(e.what()).find("credential_process of test: the process did not exit in "
                                       "time"),
            std::string::npos)
      << e.what();
  std::istringstream lines(read_file(pids));
  pid_t shell = 0, child = 0;
  lines >> shell >> child;
  ASSERT_GT(shell, 0);
  ASSERT_GT(child, 0);
  EXPECT_TRUE(process_ended(shell)) << "the credential_process itself is still running";
  // The background child was killed with the group; its new parent reaps it soon (bounded).
  for (int i = 0; i < 200 && !process_ended(child); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(process_ended(child)) << "a child of the credential_process is still running";
  if (!process_ended(child)) ::kill(child, SIGKILL);
}

TEST_F(CredentialSourcesTest, PasswordsInEndpointVariablesAreRedactedInErrors) {
  const std::string password = "endpoint-password";
  auto expect_redacted = [&](const std::function<void()>& call, const std::string& shown) {
    const Error e = error_of(call);
    const std::string what = e.what();
    EXPECT_EQ(what.find(password), std::string::npos) << what;
    EXPECT_NE(what.find(shown), std::string::npos) << shown << ": " << what;
  };
  const std::string dead = "http://user:" + password + "@127.0.0.1:1";
  // Instance metadata: in the chain's "none found" message.
  unsetenv("AWS_EC2_METADATA_DISABLED");
  setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", dead.c_str(), 1);
  expect_redacted([&] { chain(); }, "instance metadata (http://<redacted>@127.0.0.1:1)");
  setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
  // The S3 endpoint, from the environment and from the profile.
  setenv("AWS_NO_SIGN_REQUEST", "true", 1);
  for (const char* variable : {"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"}) {
    setenv(variable, dead.c_str(), 1);
    expect_redacted(
        [] {
          s3_settings_from_env(S3Source{"b", "k"});
        },
        "http://<redacted>@127.0.0.1:1");
    unsetenv(variable);
  }
  write_file(home_ / ".aws/config", "[default]\nendpoint_url = " + dead + "\n");
  expect_redacted(
      [] {
        s3_settings_from_env(S3Source{"b", "k"});
      },
      "http://<redacted>@127.0.0.1:1");
  write_file(home_ / ".aws/config", "");
  unsetenv("AWS_NO_SIGN_REQUEST");
  // The container endpoint.
  setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI",
         ("https://user:" + password + "@127.0.0.1:1/x").c_str(), 1);
  expect_redacted([&] { chain(); }, "https://<redacted>@127.0.0.1:1/x");
  unsetenv("AWS_CONTAINER_CREDENTIALS_FULL_URI");
  // STS (web identity).
  write_file(home_ / "token", "web-identity-token");
  setenv("AWS_WEB_IDENTITY_TOKEN_FILE", (home_ / "token").c_str(), 1);
  setenv("AWS_ROLE_ARN", "arn:aws:iam::1:role/r", 1);
  setenv("AWS_ENDPOINT_URL_STS", dead.c_str(), 1);
  expect_redacted([&] { chain(); }, "http://<redacted>@127.0.0.1:1");
  unsetenv("AWS_WEB_IDENTITY_TOKEN_FILE");
  // The SSO portal answering 401 (the stand-in wants another bearer token).
  InjectingStandIn stand_in;
  if (stand_in.available()) {
    write_file(home_ / ".aws/config",
               "[default]\nsso_session = s\nsso_account_id = 1\nsso_role_name = R\n"
               "[sso-session s]\nsso_region = eu-west-1\nsso_start_url = https://x/start\n");
    const std::string portal = stand_in.url();
    setenv("AWS_ENDPOINT_URL_SSO",
           ("http://user:" + password + "@" + portal.substr(portal.find("//") + 2)).c_str(), 1);
    const auto sso = aws_sso_settings(load_aws_profile());
    ASSERT_TRUE(sso);
    write_file(aws_sso_cache_file(*sso),
               R"({"accessToken": "wrong", "expiresAt": "2200-01-01T00:00:00Z"})");
    expect_redacted([&] { fetch_sso_credentials(*sso, "SSO"); }, "HTTP 401");
  }
  // The Hub endpoint, through a load.
  const TempDir hf;
  setenv("HF_HOME", hf.path().c_str(), 1);
  setenv("HF_ENDPOINT", dead.c_str(), 1);
  expect_redacted(
      [] {
        make_weight_loader({.download_timeout_seconds = 5, .download_retries = 0})
            ->get_metadata(WeightSource::hugging_face("org/repo", "model.safetensors"));
      },
      "hf://org/repo");
  unsetenv("HF_ENDPOINT");
  unsetenv("HF_HOME");
}

}  // namespace
}  // namespace ballast::test
