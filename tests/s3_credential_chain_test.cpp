// The AWS default credential chain without servers: its order (environment, web identity,
// SSO, profile keys, credential_process, container, instance metadata), what each provider's
// settings come from, credential_process (Version 1 JSON, failures, bounds, refresh counted by
// the process itself), the SSO token cache, the container endpoint's allowed hosts, and the
// error that lists where ballast looked when nothing is found.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "remote/aws_container_credentials.hpp"
#include "remote/aws_credential_chain.hpp"
#include "remote/aws_credential_process.hpp"
#include "remote/aws_imds.hpp"
#include "remote/aws_sso.hpp"
#include "remote/aws_web_identity.hpp"
#include "remote/s3_settings.hpp"
#include "support/aws_environment.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

std::string iso_in(std::chrono::seconds from_now) {
  const time_t t = AwsClock::to_time_t(AwsClock::now() + from_now);
  tm parts{};
  gmtime_r(&t, &parts);
  char text[32];
  strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &parts);
  return text;
}

class AwsCredentialChainTest : public AwsIsolatedTest {
 protected:
  std::shared_ptr<AwsCredentialProvider> chain() {
    return aws_default_credentials(load_aws_profile(), "us-west-2", "s3://b/k");
  }

  // A credential_process script printing `document` (after counting its runs in `runs`).
  std::string process(const std::string& document) {
    const auto script = home_ / "process.sh";
    write_file(script, "#!/bin/sh\necho run >> " + shell_quote((home_ / "runs").string()) +
                           "\ncat <<'JSON'\n" + document + "\nJSON\n");
    return "/bin/sh " + shell_quote(script.string());
  }
  size_t runs() {
    const std::string text = read_file(home_ / "runs");
    return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
  }
};

TEST(AwsTime, ParsesTheFormsAwsWritesAndNothingElse) {
  const auto t = parse_aws_time("2026-12-07T12:04:01Z");
  ASSERT_TRUE(t);
  EXPECT_EQ(AwsClock::to_time_t(*t), 1796645041);
  EXPECT_EQ(parse_aws_time("2026-12-07T12:04:01.731254Z"), t);
  EXPECT_EQ(parse_aws_time("2026-12-07T12:04:01+00:00"), t);
  // Beyond the clock's range (2262) is kept as 2200, not overflowed.
  EXPECT_EQ(parse_aws_time("9999-12-31T23:59:59Z"), parse_aws_time("2200-12-31T23:59:59Z"));
  EXPECT_GT(parse_aws_time("9999-12-31T23:59:59Z"), t);
  for (const char* bad :
       {"", "2026-12-07", "2026-12-07T12:04:01", "2026-13-07T12:04:01Z",
        "2026-12-07T12:04:01+02:00", "2026-12-07 12:04:01Z", "tomorrow at noon, please"})
    EXPECT_FALSE(parse_aws_time(bad)) << bad;
}

TEST_F(AwsCredentialChainTest, NothingFoundListsWhereBallastLooked) {
  Error e = error_of([&] { chain(); });
  EXPECT_EQ(e.code(), ErrorCode::auth);
  const std::string what = e.what();
  for (const char* named :
       {"no AWS credentials found", "AWS_ACCESS_KEY_ID", "AWS_WEB_IDENTITY_TOKEN_FILE",
        "profile 'default'", ".aws/credentials", ".aws/config", "credential_process", "sso_session",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_EC2_METADATA_DISABLED", "--no-sign-request",
        "AWS_NO_SIGN_REQUEST=true", "s3://b/k"})
    EXPECT_NE(what.find(named), std::string::npos) << named << ": " << what;
  // With instance metadata on and unreachable, its failure is named.
  unsetenv("AWS_EC2_METADATA_DISABLED");
  setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:1", 1);
  e = error_of([&] { chain(); });
  EXPECT_NE(std::string(e.what()).find("instance metadata (http://127.0.0.1:1): request failed"),
            std::string::npos)
      << e.what();
}

TEST_F(AwsCredentialChainTest, TheFirstConfiguredProviderWinsInTheSdkOrder) {
  write_file(home_ / ".aws/credentials",
             "[default]\naws_access_key_id = FILEKEY\naws_secret_access_key = filesecret\n");
  write_file(home_ / ".aws/config",
             "[default]\ncredential_process = " +
                 process(R"({"Version": 1, "AccessKeyId": "PROCKEY", "SecretAccessKey": "p"})") +
                 "\naws_access_key_id = CONFKEY\naws_secret_access_key = confsecret\n");
  setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://127.0.0.1:1/never-asked", 1);
  setenv("AWS_ACCESS_KEY_ID", "ENVKEY", 1);
  setenv("AWS_SECRET_ACCESS_KEY", "envsecret", 1);
  EXPECT_EQ(chain()->current().access_key, "ENVKEY");
  unsetenv("AWS_ACCESS_KEY_ID");
  unsetenv("AWS_SECRET_ACCESS_KEY");
  auto p = chain();
  EXPECT_EQ(p->current().access_key, "FILEKEY");
  EXPECT_NE(p->description().find("profile 'default' in "), std::string::npos);
  EXPECT_NE(p->description().find(".aws/credentials"), std::string::npos);
  write_file(home_ / ".aws/credentials", "");
  p = chain();
  EXPECT_EQ(p->current().access_key, "PROCKEY");
  EXPECT_EQ(p->description(), "credentials from credential_process of profile 'default'");
  write_file(home_ / ".aws/config",
             "[default]\naws_access_key_id = CONFKEY\naws_secret_access_key = confsecret\n");
  EXPECT_EQ(chain()->current().access_key, "CONFKEY");
  write_file(home_ / ".aws/config", "");
  // The container endpoint comes next: nothing listens there, and its failure is the error.
  Error e = error_of([&] { chain(); });
  EXPECT_EQ(e.code(), ErrorCode::network);
  EXPECT_NE(std::string(e.what()).find("the container endpoint (http://127.0.0.1:1/never-asked)"),
            std::string::npos)
      << e.what();
  // Web identity comes before the profile's keys, SSO before them too.
  write_file(home_ / ".aws/credentials",
             "[default]\naws_access_key_id = FILEKEY\naws_secret_access_key = filesecret\n");
  write_file(home_ / "token", "a-web-identity-token");
  setenv("AWS_WEB_IDENTITY_TOKEN_FILE", (home_ / "token").c_str(), 1);
  setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/reader", 1);
  setenv("AWS_ENDPOINT_URL_STS", "http://127.0.0.1:1", 1);
  e = error_of([&] { chain(); });
  EXPECT_NE(std::string(e.what()).find("web identity (role arn:aws:iam::123456789012:role/reader)"),
            std::string::npos)
      << e.what();
  EXPECT_EQ(std::string(e.what()).find("a-web-identity-token"), std::string::npos) << e.what();
  unsetenv("AWS_WEB_IDENTITY_TOKEN_FILE");
  write_file(home_ / ".aws/config",
             "[default]\nsso_session = my-sso\nsso_account_id = 123456789012\n"
             "sso_role_name = Reader\n[sso-session my-sso]\nsso_region = eu-west-1\n"
             "sso_start_url = https://d-123.awsapps.com/start\n");
  e = error_of([&] { chain(); });
  EXPECT_NE(std::string(e.what()).find("SSO (profile 'default', account 123456789012, role "
                                       "Reader): no cached SSO token; run `aws sso login`"),
            std::string::npos)
      << e.what();
}

TEST_F(AwsCredentialChainTest, RoleProfilesAreCheckedBeforeAnythingIsSent) {
  write_file(home_ / ".aws/config",
             "[profile a]\nrole_arn = arn:aws:iam::1:role/a\nsource_profile = b\n"
             "[profile b]\nrole_arn = arn:aws:iam::1:role/b\nsource_profile = a\n"
             "[profile both]\nrole_arn = r\nsource_profile = a\ncredential_source = Environment\n"
             "[profile mfa]\nrole_arn = r\nsource_profile = a\nmfa_serial = arn:mfa\n"
             "[profile odd]\nrole_arn = r\ncredential_source = Somewhere\n"
             "[profile empty]\nrole_arn = r\nsource_profile = nothing\n"
             "[profile nothing]\nregion = eu-west-1\n"
             "[profile missing]\nrole_arn = r\nsource_profile = nobody\n"
             "[profile lone]\nrole_arn = r\n");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"a", "starts a source_profile cycle"},
      {"both", "both source_profile and credential_source"},
      {"mfa", "needs an MFA code (mfa_serial)"},
      {"odd", "credential_source = Somewhere, which gives no credentials"},
      {"empty", "the source_profile 'nothing' of the AWS profile 'empty' gives no credentials"},
      {"missing", "the AWS profile 'nobody' is in neither shared file"},
      {"lone", "no AWS credentials found"}};  // role_arn alone is not a role profile
  for (const auto& [name, message] : cases) {
    setenv("AWS_PROFILE", name.c_str(), 1);
    Error e = error_of([&] { chain(); });
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << name << ": " << e.what();
  }
}

TEST_F(AwsCredentialChainTest, HalfAKeyPairIsAnError) {
  setenv("AWS_ACCESS_KEY_ID", "ENVKEY", 1);
  EXPECT_EQ(error_of([&] { chain(); }).code(), ErrorCode::auth);
  unsetenv("AWS_ACCESS_KEY_ID");
  write_file(home_ / ".aws/credentials", "[default]\naws_secret_access_key = lonely\n");
  Error e = error_of([&] { chain(); });
  EXPECT_EQ(e.code(), ErrorCode::auth);
  EXPECT_EQ(std::string(e.what()).find("lonely"), std::string::npos) << e.what();
}

TEST_F(AwsCredentialChainTest, CredentialProcessDocumentsAndFailures) {
  const std::string secret = "process-secret-value";
  const std::string expiring = iso_in(std::chrono::hours(1));
  AwsCredentials c = run_credential_process(
      process(fmt::format(R"({{"Version": 1, "AccessKeyId": "ASIAPROC", "SecretAccessKey": "{}",
                               "SessionToken": "proc-token", "Expiration": "{}"}})",
                          secret, expiring)),
      "p");
  EXPECT_EQ(c.access_key, "ASIAPROC");
  EXPECT_EQ(c.secret_key, secret);
  EXPECT_EQ(c.session_token, "proc-token");
  EXPECT_EQ(c.expiration, parse_aws_time(expiring));
  struct Case {
    std::string command, message;
  };
  const std::vector<Case> cases = {
      {"echo " + secret + "; exit 3", "the process exited with status 3"},
      {"kill -9 $$", "the process was killed by signal 9"},
      {"echo '{\"Version\": 1, \"AccessKeyId\": \"A\", \"SecretAccessKey\": \"" + secret + "\"'",
       "not a JSON object"},
      {"echo '{\"Version\": 2, \"AccessKeyId\": \"A\", \"SecretAccessKey\": \"" + secret + "\"}'",
       "\"Version\": 1"},
      {"echo '{\"Version\": 1, \"AccessKeyId\": \"A\"}'", "lacks an access key id or a secret"},
      {"echo '{\"Version\": 1, \"AccessKeyId\": \"A\", \"SecretAccessKey\": \"" + secret +
           "\", \"Expiration\": \"2001-01-01T00:00:00Z\"}'",
       "have expired"},
      {"echo '{\"Version\": 1, \"AccessKeyId\": \"A\", \"SecretAccessKey\": \"" + secret +
           "\", \"Expiration\": \"soon\"}'",
       "Expiration is not an ISO 8601 UTC time"},
      {"head -c 200000 /dev/zero", "printed more than 65536 bytes"},
      {"sleep 30", "did not finish in time"},
  };
  for (const auto& [command, message] : cases) {
    Error e = error_of([&, &command = command] {
      run_credential_process(command, "credential_process of test", std::chrono::seconds(1));
    });
    EXPECT_EQ(e.code(), ErrorCode::auth) << command;
    EXPECT_TRUE(std::string(e.what()).starts_with("auth: credential_process of test: "))
        << e.what();
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find(secret), std::string::npos) << e.what();
  }
}

// Counts, not times: credentials expiring within kAwsRefreshBefore are fetched again for every
// use, long-lived ones once.
TEST_F(AwsCredentialChainTest, ExpiringCredentialsAreFetchedAgainForEachUse) {
  const std::string document = R"({"Version": 1, "AccessKeyId": "ASIAPROC",
      "SecretAccessKey": "s", "SessionToken": "t", "Expiration": ")";
  write_file(home_ / ".aws/config",
             "[default]\ncredential_process = " +
                 process(document + iso_in(std::chrono::seconds(60)) + "\"}") + "\n");
  auto provider = chain();
  EXPECT_EQ(runs(), 1u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(provider->current().access_key, "ASIAPROC");
  EXPECT_EQ(runs(), 4u);
  std::filesystem::remove(home_ / "runs");
  write_file(home_ / ".aws/config", "[default]\ncredential_process = " +
                                        process(document + iso_in(std::chrono::hours(1)) + "\"}") +
                                        "\n");
  provider = chain();
  for (int i = 0; i < 3; ++i) provider->current();
  EXPECT_EQ(runs(), 1u);
  // A refresh that fails while the credentials are still valid keeps them.
  std::filesystem::remove(home_ / "runs");
  write_file(home_ / ".aws/config",
             "[default]\ncredential_process = " +
                 process(document + iso_in(std::chrono::seconds(60)) + "\"}") + "\n");
  provider = chain();
  write_file(home_ / "process.sh",
             "#!/bin/sh\necho run >> " + shell_quote((home_ / "runs").string()) + "\nexit 1\n");
  EXPECT_EQ(provider->current().access_key, "ASIAPROC");
  EXPECT_EQ(runs(), 2u);
}

TEST_F(AwsCredentialChainTest, SsoSettingsAndTheTokenCache) {
  write_file(home_ / ".aws/config",
             "[profile dev]\nsso_session = my-sso\nsso_account_id = 123456789012\n"
             "sso_role_name = Reader\n[sso-session my-sso]\nsso_region = eu-west-1\n"
             "sso_start_url = https://d-123.awsapps.com/start\n"
             "[profile legacy]\nsso_start_url = https://d-123.awsapps.com/start\n"
             "sso_region = us-east-2\nsso_account_id = 1\nsso_role_name = R\n"
             "[profile half]\nsso_account_id = 1\n"
             "[profile lost]\nsso_session = nowhere\n");
  setenv("AWS_PROFILE", "dev", 1);
  auto sso = aws_sso_settings(load_aws_profile());
  ASSERT_TRUE(sso);
  EXPECT_EQ(sso->portal, "https://portal.sso.eu-west-1.amazonaws.com");
  EXPECT_EQ(aws_sso_cache_file(*sso),
            (home_ / ".aws/sso/cache/0ad374308c5a4e22f723adf10145eafad7c4031c.json").string());
  setenv("AWS_ENDPOINT_URL_SSO", "http://127.0.0.1:9/", 1);
  EXPECT_EQ(aws_sso_settings(load_aws_profile())->portal, "http://127.0.0.1:9");
  setenv("AWS_PROFILE", "legacy", 1);
  sso = aws_sso_settings(load_aws_profile());
  EXPECT_EQ(aws_sso_cache_file(*sso),
            (home_ / ".aws/sso/cache/2b829a45f04c9828cb45b7d092d8e4aa30818393.json").string());
  EXPECT_EQ(sso->region, "us-east-2");
  setenv("AWS_PROFILE", "half", 1);
  EXPECT_EQ(error_of([] { aws_sso_settings(load_aws_profile()); }).code(),
            ErrorCode::invalid_argument);
  setenv("AWS_PROFILE", "lost", 1);
  EXPECT_EQ(error_of([] { load_aws_profile(); }).code(), ErrorCode::invalid_argument);
  // An expired cached token asks for a new login; the token never shows.
  setenv("AWS_PROFILE", "dev", 1);
  sso = aws_sso_settings(load_aws_profile());
  write_file(aws_sso_cache_file(*sso),
             R"({"accessToken": "sso-bearer-secret", "expiresAt": "2001-01-01T00:00:00Z"})");
  Error e = error_of([&] { fetch_sso_credentials(*sso, "SSO"); });
  EXPECT_NE(std::string(e.what()).find("the cached SSO token has expired; run `aws sso login`"),
            std::string::npos)
      << e.what();
  EXPECT_EQ(std::string(e.what()).find("sso-bearer-secret"), std::string::npos);
  write_file(aws_sso_cache_file(*sso), "{garbage");
  EXPECT_NE(std::string(error_of([&] { fetch_sso_credentials(*sso, "SSO"); }).what())
                .find("lacks accessToken or expiresAt"),
            std::string::npos);
}

TEST_F(AwsCredentialChainTest, WebIdentitySettingsFromTheEnvironmentThenTheProfile) {
  write_file(home_ / ".aws/config",
             "[default]\nrole_arn = arn:aws:iam::1:role/profile\n"
             "web_identity_token_file = /profile/token\nrole_session_name = from-profile\n");
  auto web = aws_web_identity_settings(load_aws_profile(), "eu-central-1");
  ASSERT_TRUE(web);
  EXPECT_EQ(web->token_file, "/profile/token");
  EXPECT_EQ(web->role_arn, "arn:aws:iam::1:role/profile");
  EXPECT_EQ(web->session_name, "from-profile");
  EXPECT_EQ(web->sts_endpoint, "https://sts.eu-central-1.amazonaws.com");
  setenv("AWS_WEB_IDENTITY_TOKEN_FILE", "/env/token", 1);
  setenv("AWS_ROLE_ARN", "arn:aws:iam::1:role/env", 1);
  setenv("AWS_ENDPOINT_URL_STS", "http://127.0.0.1:7/", 1);
  web = aws_web_identity_settings(load_aws_profile(), "eu-central-1");
  EXPECT_EQ(web->token_file, "/env/token");
  EXPECT_EQ(web->role_arn, "arn:aws:iam::1:role/env");
  EXPECT_TRUE(web->session_name.starts_with("ballast-")) << web->session_name;
  EXPECT_EQ(web->sts_endpoint, "http://127.0.0.1:7");
  unsetenv("AWS_ROLE_ARN");
  EXPECT_EQ(error_of([] { aws_web_identity_settings(load_aws_profile(), "x"); }).code(),
            ErrorCode::invalid_argument);
}

TEST_F(AwsCredentialChainTest, ContainerEndpointsAreLoopbackContainerHostsOrHttps) {
  EXPECT_FALSE(aws_container_credentials_url());
  setenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "/v2/credentials/abc", 1);
  EXPECT_EQ(aws_container_credentials_url(), "http://169.254.170.2/v2/credentials/abc");
  unsetenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
  for (const char* allowed :
       {"http://127.0.0.1:8080/creds", "http://127.5.6.7/c", "http://localhost/c",
        "http://[::1]:80/c", "http://169.254.170.2/c", "http://169.254.170.23/v1/credentials",
        "http://[fd00:ec2::23]/v1/credentials", "https://creds.example.com/c"}) {
    setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", allowed, 1);
    EXPECT_EQ(aws_container_credentials_url(), allowed);
  }
  for (const char* refused : {"http://creds.example.com/c", "http://10.0.0.1/c",
                              "http://[fd00::1]/c", "http://127.0.0.1.example.com/c",
                              "ftp://127.0.0.1/c", "http://user@example.com@127.0.0.1/c"}) {
    setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", refused, 1);
    EXPECT_EQ(error_of([] { aws_container_credentials_url(); }).code(), ErrorCode::invalid_argument)
        << refused;
  }
}

TEST_F(AwsCredentialChainTest, InstanceMetadataSettings) {
  EXPECT_FALSE(aws_imds_settings());  // the test environment turns it off
  unsetenv("AWS_EC2_METADATA_DISABLED");
  auto imds = aws_imds_settings();
  ASSERT_TRUE(imds);
  EXPECT_EQ(imds->endpoint, "http://169.254.169.254");
  EXPECT_EQ(imds->timeout_seconds, 1.0);
  EXPECT_EQ(imds->attempts, 1);
  setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://[fd00:ec2::254]/", 1);
  setenv("AWS_METADATA_SERVICE_TIMEOUT", "2.5", 1);
  setenv("AWS_METADATA_SERVICE_NUM_ATTEMPTS", "3", 1);
  imds = aws_imds_settings();
  EXPECT_EQ(imds->endpoint, "http://[fd00:ec2::254]");
  EXPECT_EQ(imds->timeout_seconds, 2.5);
  EXPECT_EQ(imds->attempts, 3);
  setenv("AWS_METADATA_SERVICE_NUM_ATTEMPTS", "-1", 1);
  EXPECT_EQ(error_of([] { aws_imds_settings(); }).code(), ErrorCode::invalid_argument);
  setenv("AWS_EC2_METADATA_DISABLED", "TRUE", 1);
  EXPECT_FALSE(aws_imds_settings());
}

}  // namespace
}  // namespace ballast::test
