// The AWS credential providers against local stand-ins, each proved by real signed S3 GETs
// through the SigV4-verifying proxy (support/s3_server.hpp): web identity through moto's STS
// (env and profile), roles assumed through moto's STS (source_profile, a chain of two roles,
// credential_source = EcsContainer; each AssumeRole's signature checked by the proxy), the
// container endpoint (token and token file), IMDSv2 and SSO
// (tests/servers/aws_credentials_server.py), each provider's failures (error statuses,
// malformed and oversized answers, refused tokens) as errors naming it without its secrets,
// refresh counted by the stand-in (every signed request of a load with soon-expiring
// credentials asks it again; long-lived ones are fetched once), and a 403 naming the provider.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <sstream>

#include <fmt/format.h>

#include "ballast/ballast.hpp"
#include "remote/aws_http.hpp"
#include "support/aws_environment.hpp"
#include "support/process.hpp"
#include "support/s3_server.hpp"
#include "support/safetensors_writer.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

using nlohmann::json;

S3Server& server() { return process_wide<S3Server>(); }

constexpr const char* kCallerSecret = "caller-secret-token-0123";

// tests/servers/aws_credentials_server.py handing out `keys`.
class CredentialStandIn {
 public:
  explicit CredentialStandIn(const S3Keys& keys = S3Server::kTemporaryKeys)
      : process_({kDebianPython, BALLAST_SOURCE_DIR "/tests/servers/aws_credentials_server.py",
                  keys.access_key + ":" + keys.secret_key + ":" + keys.session_token,
                  kCallerSecret}) {
    auto line = process_.read_line(std::chrono::seconds(30));
    if (line) std::istringstream(*line) >> port_;
  }
  bool available() const { return port_ != 0; }
  std::string url(const std::string& path = "") const {
    return fmt::format("http://127.0.0.1:{}{}", port_, path);
  }
  void set(const std::string& query) const {
    aws_http({.method = "POST", .url = url("/_set?" + query)}, "stand-in");
  }
  json stats() const { return json::parse(aws_http({.url = url("/_stats")}, "stand-in").body); }

 private:
  Process process_;
  int port_ = 0;
};

WeightLoaderConfig remote_config() {
  WeightLoaderConfig config;
  config.enable_caching = false;
  config.download_timeout_seconds = 10;
  config.download_retries = 1;
  return config;
}

// Each test starts with no credentials, the server's endpoint and region, an empty HOME and
// instance metadata off.
class S3CredentialProvidersTest : public AwsIsolatedTest {
 protected:
  void SetUp() override {
    AwsIsolatedTest::SetUp();
    BALLAST_REQUIRE_S3(server());
    if (!stand_in_.available()) BALLAST_MISSING("aws_credentials_server.py did not start");
    setenv("AWS_REGION", S3Server::kRegion, 1);
    setenv("AWS_ENDPOINT_URL_S3", server().endpoint().c_str(), 1);
    server().put("models", "creds.safetensors", safetensors_file({{"x", "U8", {4}, "abcd"}}));
  }

  // Loads the tensor: a HEAD-less ranged load, every request signed.
  std::string load() {
    auto loader = make_weight_loader(remote_config());
    auto x = loader->load_tensor(
        TensorSpec{.name = "x", .source = WeightSource::s3("models", "creds.safetensors")});
    return std::string(reinterpret_cast<const char*>(x->bytes().data()), 4);
  }

  size_t s3_requests() {
    size_t n = 0;
    for (const auto& r : server().requests()) n += !r.contains("action");
    return n;
  }

  CredentialStandIn stand_in_;
};

TEST_F(S3CredentialProvidersTest, WebIdentityThroughStsSignsRealRequests) {
  write_file(home_ / "token", "eyJ.web-identity-token.sig\n");
  setenv("AWS_WEB_IDENTITY_TOKEN_FILE", (home_ / "token").c_str(), 1);
  setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/reader", 1);
  setenv("AWS_ROLE_SESSION_NAME", "ballast-test", 1);
  setenv("AWS_ENDPOINT_URL_STS", server().endpoint().c_str(), 1);
  server().clear_log();
  EXPECT_EQ(load(), "abcd");
  std::vector<json> sts;
  for (const auto& r : server().requests())
    if (r.contains("action")) sts.push_back(r);
  ASSERT_EQ(sts.size(), 1u);
  EXPECT_EQ(sts[0]["action"], "AssumeRoleWithWebIdentity");
  EXPECT_EQ(sts[0]["role_arn"], "arn:aws:iam::123456789012:role/reader");
  EXPECT_EQ(sts[0]["session_name"], "ballast-test");
  EXPECT_EQ(sts[0]["web_identity_token"], "eyJ.web-identity-token.sig");
  EXPECT_EQ(sts[0]["status"], 200);
  // The same from the profile, through the CLI.
  clear_aws_environment();
  write_file(home_ / ".aws/config",
             fmt::format("[default]\nregion = {}\nrole_arn = arn:aws:iam::1:role/profile\n"
                         "web_identity_token_file = {}\n",
                         S3Server::kRegion, (home_ / "token").string()));
  setenv("AWS_ENDPOINT_URL_STS", server().endpoint().c_str(), 1);
  setenv("AWS_ENDPOINT_URL_S3", server().endpoint().c_str(), 1);
  auto cli = run_command(cli_path() + " inspect --no-cache --json s3://models/creds.safetensors");
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  EXPECT_EQ(json::parse(cli.out)["tensors"].size(), 1u);
}

// Roles assumed with a source profile's keys, through a chain of two roles, and with the
// container's credentials: every AssumeRole is signed (the proxy checks it) with the source's.
TEST_F(S3CredentialProvidersTest, AssumedRolesSignRealRequests) {
  write_file(home_ / ".aws/credentials",
             "[base]\naws_access_key_id = " + S3Server::kKeys.access_key +
                 "\naws_secret_access_key = " + S3Server::kKeys.secret_key + "\n");
  write_file(home_ / ".aws/config",
             "[profile reader]\nrole_arn = arn:aws:iam::123456789012:role/reader\n"
             "source_profile = base\nrole_session_name = ballast-role-test\n"
             "external_id = ext-1\nduration_seconds = 900\n"
             "[profile chained]\nrole_arn = arn:aws:iam::123456789012:role/second\n"
             "source_profile = reader\n"
             "[profile boxed]\nrole_arn = arn:aws:iam::123456789012:role/third\n"
             "credential_source = EcsContainer\n");
  setenv("AWS_ENDPOINT_URL_STS", server().endpoint().c_str(), 1);
  auto assume_roles = [&] {
    std::vector<json> sts;
    for (const auto& r : server().requests())
      if (r.contains("action")) sts.push_back(r);
    return sts;
  };
  setenv("AWS_PROFILE", "reader", 1);
  server().clear_log();
  EXPECT_EQ(load(), "abcd");
  auto sts = assume_roles();
  ASSERT_EQ(sts.size(), 1u);
  EXPECT_EQ(sts[0]["action"], "AssumeRole");
  EXPECT_EQ(sts[0]["status"], 200);
  EXPECT_EQ(sts[0]["signed_by"], S3Server::kKeys.access_key);
  EXPECT_EQ(sts[0]["role_arn"], "arn:aws:iam::123456789012:role/reader");
  EXPECT_EQ(sts[0]["session_name"], "ballast-role-test");
  setenv("AWS_PROFILE", "chained", 1);
  server().clear_log();
  EXPECT_EQ(load(), "abcd");
  sts = assume_roles();
  ASSERT_EQ(sts.size(), 2u);
  EXPECT_EQ(sts[0]["signed_by"], S3Server::kKeys.access_key);
  EXPECT_EQ(sts[1]["role_arn"], "arn:aws:iam::123456789012:role/second");
  EXPECT_TRUE(sts[1]["signed_by"].get<std::string>().starts_with("ASIA")) << sts[1].dump();
  setenv("AWS_PROFILE", "boxed", 1);
  setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", stand_in_.url("/container/credentials").c_str(), 1);
  setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", kCallerSecret, 1);
  server().clear_log();
  EXPECT_EQ(load(), "abcd");
  sts = assume_roles();
  ASSERT_EQ(sts.size(), 1u);
  EXPECT_EQ(sts[0]["signed_by"], S3Server::kTemporaryKeys.access_key);
  // A refused AssumeRole names the role and the source, never the secret.
  const std::string wrong = "not-the-base-secret-9876";
  write_file(home_ / ".aws/credentials",
             "[base]\naws_access_key_id = " + S3Server::kKeys.access_key +
                 "\naws_secret_access_key = " + wrong + "\n");
  setenv("AWS_PROFILE", "reader", 1);
  Error e = error_of([&] { load(); });
  EXPECT_EQ(e.code(), ErrorCode::auth) << e.what();
  EXPECT_NE(std::string(e.what()).find("the role arn:aws:iam::123456789012:role/reader (profile "
                                       "'reader'): AssumeRole answered HTTP 403 "
                                       "(SignatureDoesNotMatch"),
            std::string::npos)
      << e.what();
  EXPECT_NE(std::string(e.what()).find("signed with credentials from profile 'base'"),
            std::string::npos)
      << e.what();
  EXPECT_EQ(std::string(e.what()).find(wrong), std::string::npos) << e.what();
}

TEST_F(S3CredentialProvidersTest, WebIdentityFailuresNameTheProviderNotTheToken) {
  write_file(home_ / "token", "secret-web-identity-token");
  setenv("AWS_WEB_IDENTITY_TOKEN_FILE", (home_ / "token").c_str(), 1);
  setenv("AWS_ROLE_ARN", "arn:aws:iam::1:role/r", 1);
  setenv("AWS_ENDPOINT_URL_STS", stand_in_.url().c_str(), 1);  // no STS there: 404
  Error e = error_of([&] { load(); });
  EXPECT_EQ(e.code(), ErrorCode::auth) << e.what();
  EXPECT_NE(std::string(e.what()).find(
                "web identity (role arn:aws:iam::1:role/r): AssumeRoleWithWebIdentity answered "
                "HTTP 404"),
            std::string::npos)
      << e.what();
  EXPECT_EQ(std::string(e.what()).find("secret-web-identity-token"), std::string::npos);
  std::filesystem::remove(home_ / "token");
  e = error_of([&] { load(); });
  EXPECT_NE(std::string(e.what()).find("the token file is missing or empty"), std::string::npos)
      << e.what();
}

TEST_F(S3CredentialProvidersTest, ContainerCredentialsWithTokenOrTokenFile) {
  setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", stand_in_.url("/container/credentials").c_str(), 1);
  setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", kCallerSecret, 1);
  EXPECT_EQ(load(), "abcd");
  EXPECT_EQ(stand_in_.stats()["container"], 1);
  write_file(home_ / "container-token", std::string(kCallerSecret) + "\n");
  setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "the-file-wins", 1);
  setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", (home_ / "container-token").c_str(), 1);
  EXPECT_EQ(load(), "abcd");
  EXPECT_EQ(stand_in_.stats()["container"], 2);
  unsetenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
  Error e = error_of([&] { load(); });  // "the-file-wins" is refused
  EXPECT_EQ(e.code(), ErrorCode::auth) << e.what();
  EXPECT_NE(std::string(e.what()).find("the container endpoint (http://127.0.0.1:"),
            std::string::npos)
      << e.what();
  EXPECT_NE(std::string(e.what()).find("answered HTTP 401"), std::string::npos) << e.what();
  EXPECT_EQ(std::string(e.what()).find("the-file-wins"), std::string::npos) << e.what();
}

TEST_F(S3CredentialProvidersTest, ProviderFailuresAreBoundedErrorsNamingTheProvider) {
  setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", stand_in_.url("/container/credentials").c_str(), 1);
  setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", kCallerSecret, 1);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"500", "answered HTTP 500 (the stand-in fails on purpose)"},
      {"malformed", "the answer is not a JSON object"},
      {"huge", "the answer is larger than 65536 bytes"},
      {"expired", "the credentials it gave have expired"}};
  for (const auto& [mode, message] : cases) {
    stand_in_.set("fail=" + mode);
    Error e = error_of([&] { load(); });
    EXPECT_NE(std::string(e.what()).find("the container endpoint (http://127.0.0.1:"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << mode << ": " << e.what();
    EXPECT_EQ(std::string(e.what()).find(S3Server::kTemporaryKeys.secret_key), std::string::npos);
  }
  // Instance metadata's failure means "not found": the error lists where ballast looked.
  unsetenv("AWS_CONTAINER_CREDENTIALS_FULL_URI");
  unsetenv("AWS_EC2_METADATA_DISABLED");
  setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", stand_in_.url().c_str(), 1);
  stand_in_.set("fail=500");
  Error e = error_of([&] { load(); });
  EXPECT_EQ(e.code(), ErrorCode::auth) << e.what();
  EXPECT_NE(std::string(e.what()).find("no AWS credentials found"), std::string::npos);
  EXPECT_NE(std::string(e.what()).find("instance metadata (http://127.0.0.1:"), std::string::npos)
      << e.what();
  EXPECT_NE(std::string(e.what()).find("the role's credentials answered HTTP 500"),
            std::string::npos)
      << e.what();
}

TEST_F(S3CredentialProvidersTest, InstanceMetadataV2SignsRealRequests) {
  unsetenv("AWS_EC2_METADATA_DISABLED");
  setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", (stand_in_.url() + "/").c_str(), 1);
  EXPECT_EQ(load(), "abcd");
  const json stats = stand_in_.stats();
  EXPECT_EQ(stats["imds_token"], 1);
  EXPECT_EQ(stats["imds_role"], 1);
  EXPECT_EQ(stats["imds_credentials"], 1);
  EXPECT_EQ(stats["refused"], 0);
}

// The keys the proxy knows, with a header line after the session token: through instance
// metadata and the container endpoint, the load fails with auth naming the provider and S3
// never sees a request (it would have accepted the signature with the extra header).
TEST_F(S3CredentialProvidersTest, ALineBreakInAProvidersTokenNeverReachesS3) {
  S3Keys injected = S3Server::kTemporaryKeys;
  injected.session_token += "\r\nX-Injected: yes";
  const CredentialStandIn injecting(injected);
  ASSERT_TRUE(injecting.available());
  unsetenv("AWS_EC2_METADATA_DISABLED");
  setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", injecting.url().c_str(), 1);
  server().clear_log();
  Error e = error_of([&] { load(); });
  EXPECT_EQ(e.code(), ErrorCode::auth) << e.what();
  EXPECT_NE(std::string(e.what()).find("instance metadata (" + injecting.url() +
                                       "): the session token holds a control character"),
            std::string::npos)
      << e.what();
  setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
  setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", injecting.url("/container/credentials").c_str(), 1);
  setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", kCallerSecret, 1);
  e = error_of([&] { load(); });
  EXPECT_EQ(e.code(), ErrorCode::auth) << e.what();
  EXPECT_NE(std::string(e.what()).find("the session token holds a control character"),
            std::string::npos)
      << e.what();
  EXPECT_EQ(std::string(e.what()).find(S3Server::kTemporaryKeys.session_token), std::string::npos)
      << e.what();
  EXPECT_EQ(s3_requests(), 0u);
}

TEST_F(S3CredentialProvidersTest, SsoRoleCredentialsFromTheTokenCache) {
  write_file(home_ / ".aws/config",
             "[default]\nsso_session = corp\nsso_account_id = 123456789012\n"
             "sso_role_name = ModelReader\n[sso-session corp]\nsso_region = eu-west-1\n"
             "sso_start_url = https://d-123.awsapps.com/start\n");
  setenv("AWS_ENDPOINT_URL_SSO", stand_in_.url().c_str(), 1);
  // sha1("corp")
  const auto cache = home_ / ".aws/sso/cache/ee0bfd2552fbd840c02cc48b6e823320543c450f.json";
  write_file(cache, fmt::format(R"({{"accessToken": "{}", "expiresAt": "2999-01-01T00:00:00Z",
                                     "region": "eu-west-1"}})",
                                kCallerSecret));
  EXPECT_EQ(load(), "abcd");
  const json stats = stand_in_.stats();
  EXPECT_EQ(stats["sso"], 1);
  EXPECT_EQ(stats["sso_query"],
            json({{"role_name", "ModelReader"}, {"account_id", "123456789012"}}));
  write_file(cache, R"({"accessToken": "not-the-token", "expiresAt": "2999-01-01T00:00:00Z"})");
  Error e = error_of([&] { load(); });
  EXPECT_NE(std::string(e.what()).find("SSO (profile 'default', account 123456789012, role "
                                       "ModelReader): GetRoleCredentials answered HTTP 401"),
            std::string::npos)
      << e.what();
  EXPECT_EQ(std::string(e.what()).find("not-the-token"), std::string::npos);
}

// Counts, not times: with credentials that expire within the refresh margin, every signed
// request asks the provider again, so a load that outlives them keeps signing with fresh ones;
// long-lived credentials are fetched once per load.
TEST_F(S3CredentialProvidersTest, ExpiringCredentialsAreRefreshedForEverySignedRequest) {
  setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", stand_in_.url("/container/credentials").c_str(), 1);
  setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", kCallerSecret, 1);
  stand_in_.set("expires_in=60");
  server().clear_log();
  EXPECT_EQ(load(), "abcd");
  const size_t signed_requests = s3_requests();
  EXPECT_GE(signed_requests, 2u);
  EXPECT_EQ(stand_in_.stats()["container"], 1 + signed_requests);
  stand_in_.set("expires_in=3600");
  server().clear_log();
  EXPECT_EQ(load(), "abcd");
  EXPECT_EQ(s3_requests(), signed_requests);
  EXPECT_EQ(stand_in_.stats()["container"], 2 + signed_requests);
}

TEST_F(S3CredentialProvidersTest, ARefusalNamesTheProviderNeverTheSecret) {
  const S3Keys unknown{"ASIAUNKNOWNTOPROXY", "unknown-secret-value", "unknown-session-token"};
  CredentialStandIn other(unknown);
  ASSERT_TRUE(other.available());
  setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", other.url("/container/credentials").c_str(), 1);
  setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", kCallerSecret, 1);
  Error e = error_of([&] { load(); });
  EXPECT_EQ(e.code(), ErrorCode::auth) << e.what();
  const std::string what = e.what();
  EXPECT_NE(what.find("InvalidAccessKeyId"), std::string::npos) << what;
  EXPECT_NE(what.find("signed with credentials from the container endpoint (" +
                      other.url("/container/credentials") + ")"),
            std::string::npos)
      << what;
  for (const std::string& secret :
       {unknown.secret_key, unknown.session_token, std::string(kCallerSecret)})
    EXPECT_EQ(what.find(secret), std::string::npos) << what;
  auto cli = run_command(cli_path() + " inspect --no-cache s3://models/creds.safetensors");
  EXPECT_NE(cli.exit_code, 0);
  EXPECT_NE(cli.err.find("signed with credentials from the container endpoint"), std::string::npos)
      << cli.err;
  for (const std::string& secret :
       {unknown.secret_key, unknown.session_token, std::string(kCallerSecret)}) {
    EXPECT_EQ(cli.err.find(secret), std::string::npos) << cli.err;
    EXPECT_EQ(cli.out.find(secret), std::string::npos) << cli.out;
  }
}

}  // namespace
}  // namespace ballast::test
