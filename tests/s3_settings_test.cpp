// S3 settings and addressing without a server: path-style and virtual-hosted URLs (no DNS
// needed), key encoding, where region, endpoint and credentials come from (source, environment,
// profile files), the signed headers of a target, and the AWS INI files as hostile input.
#include <gtest/gtest.h>
#include <stdlib.h>

#include "ballast/error.hpp"
#include "remote/ini_file.hpp"
#include "remote/s3_object.hpp"
#include "remote/s3_settings.hpp"
#include "support/aws_environment.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

// Every test starts from an environment with no AWS settings, an empty HOME and unsigned
// requests asked for (AWS_NO_SIGN_REQUEST; the tests of credentials unset it).
class S3SettingsTest : public AwsIsolatedTest {
 protected:
  void SetUp() override {
    AwsIsolatedTest::SetUp();
    setenv("AWS_NO_SIGN_REQUEST", "true", 1);
  }
};

S3Source source(std::optional<std::string> region = {}, std::optional<std::string> endpoint = {}) {
  return S3Source{"models", "k", std::move(region), std::move(endpoint)};
}

ErrorCode code_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.code();
  }
  ADD_FAILURE() << "expected an error";
  return ErrorCode::io;
}

TEST_F(S3SettingsTest, AwsEndpointsAreVirtualHostedInTheirRegion) {
  S3Settings s = s3_settings_from_env(source("eu-west-1"));
  EXPECT_FALSE(s.custom_endpoint);
  EXPECT_FALSE(s.credentials);
  EXPECT_EQ(s3_object_url(s, "models", "llama/model.safetensors"),
            "https://models.s3.eu-west-1.amazonaws.com/llama/model.safetensors");
  EXPECT_EQ(s3_object_url(s3_settings_from_env(source()), "models", "k"),
            "https://models.s3.us-east-1.amazonaws.com/k");
}

TEST_F(S3SettingsTest, DottedBucketsOnAwsArePathStyle) {
  S3Settings s = s3_settings_from_env(source("eu-west-1"));
  EXPECT_EQ(s3_object_url(s, "my.models", "k"), "https://s3.eu-west-1.amazonaws.com/my.models/k");
}

TEST_F(S3SettingsTest, CustomEndpointsArePathStyleUnlessToldOtherwise) {
  S3Settings s = s3_settings_from_env(source({}, "http://127.0.0.1:9000/"));
  EXPECT_TRUE(s.custom_endpoint);
  EXPECT_EQ(s3_object_url(s, "models", "a/b"), "http://127.0.0.1:9000/models/a/b");
  setenv("BALLAST_S3_ADDRESSING_STYLE", "virtual", 1);
  s = s3_settings_from_env(source({}, "https://minio.example:9000/base"));
  EXPECT_EQ(s3_object_url(s, "models", "a/b"), "https://models.minio.example:9000/base/a/b");
  setenv("BALLAST_S3_ADDRESSING_STYLE", "path", 1);
  s = s3_settings_from_env(source("eu-west-1"));
  EXPECT_EQ(s3_object_url(s, "models", "a"), "https://s3.eu-west-1.amazonaws.com/models/a");
  setenv("BALLAST_S3_ADDRESSING_STYLE", "sideways", 1);
  EXPECT_EQ(code_of([] { s3_settings_from_env(source()); }), ErrorCode::invalid_argument);
}

TEST_F(S3SettingsTest, KeysArePercentEncodedAsSigV4CanonicalUris) {
  S3Settings s = s3_settings_from_env(source({}, "http://h:1"));
  EXPECT_EQ(s3_object_url(s, "models", "dir/a b+c=d~e_f.g-h%&?#é"),
            "http://h:1/models/dir/a%20b%2Bc%3Dd~e_f.g-h%25%26%3F%23%C3%A9");
}

TEST_F(S3SettingsTest, BadNamesAndEndpointsAreRefused) {
  S3Settings s = s3_settings_from_env(source({}, "http://h:1"));
  for (const char* bucket : {"", "ab", "UPPER", "a/b", "has space"})
    EXPECT_EQ(code_of([&] { s3_object_url(s, bucket, "k"); }), ErrorCode::invalid_argument)
        << bucket;
  EXPECT_EQ(code_of([&] { s3_object_url(s, "models", ""); }), ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([&] { s3_object_url(s, "models", std::string(1025, 'k')); }),
            ErrorCode::invalid_argument);
  for (const char* endpoint : {"ftp://h", "http://", "http://u:p@h", "http://h/?q", "h:9000"})
    EXPECT_EQ(code_of([&] { s3_settings_from_env(source({}, endpoint)); }),
              ErrorCode::invalid_argument)
        << endpoint;
  EXPECT_EQ(code_of([] { s3_settings_from_env(source("EU WEST")); }), ErrorCode::invalid_argument);
}

TEST_F(S3SettingsTest, TheSourceWinsOverTheEnvironment) {
  setenv("AWS_REGION", "us-west-2", 1);
  setenv("AWS_DEFAULT_REGION", "ap-south-1", 1);
  setenv("AWS_ENDPOINT_URL", "http://generic:1", 1);
  EXPECT_EQ(s3_settings_from_env(source()).region, "us-west-2");
  EXPECT_EQ(s3_settings_from_env(source()).endpoint, "http://generic:1");
  setenv("AWS_ENDPOINT_URL_S3", "http://s3-only:2", 1);
  EXPECT_EQ(s3_settings_from_env(source()).endpoint, "http://s3-only:2");
  S3Settings s = s3_settings_from_env(source("eu-north-1", "http://mine:3"));
  EXPECT_EQ(s.region, "eu-north-1");
  EXPECT_EQ(s.endpoint, "http://mine:3");
  unsetenv("AWS_REGION");
  EXPECT_EQ(s3_settings_from_env(source()).region, "ap-south-1");
}

TEST_F(S3SettingsTest, EnvironmentCredentialsWinOverProfiles) {
  write_file(home_.path() / ".aws/credentials",
             "[default]\naws_access_key_id = FILEKEY\naws_secret_access_key = filesecret\n");
  unsetenv("AWS_NO_SIGN_REQUEST");
  setenv("AWS_ACCESS_KEY_ID", "ENVKEY", 1);
  setenv("AWS_SECRET_ACCESS_KEY", "envsecret", 1);
  setenv("AWS_SESSION_TOKEN", "envtoken", 1);
  S3Settings s = s3_settings_from_env(source());
  ASSERT_TRUE(s.credentials);
  EXPECT_EQ(s.credentials->current().access_key, "ENVKEY");
  EXPECT_EQ(s.credentials->current().secret_key, "envsecret");
  EXPECT_EQ(s.credentials->current().session_token, "envtoken");
  EXPECT_EQ(s.credentials->description(), "credentials from the environment (AWS_ACCESS_KEY_ID)");
  setenv("AWS_NO_SIGN_REQUEST", "TRUE", 1);  // asked for: unsigned even with credentials
  EXPECT_FALSE(s3_settings_from_env(source()).credentials);
  setenv("AWS_NO_SIGN_REQUEST", "yes", 1);
  EXPECT_EQ(code_of([] { s3_settings_from_env(source()); }), ErrorCode::invalid_argument);
  setenv("AWS_NO_SIGN_REQUEST", "false", 1);
  unsetenv("AWS_SECRET_ACCESS_KEY");
  EXPECT_EQ(code_of([] { s3_settings_from_env(source()); }), ErrorCode::auth);
}

TEST_F(S3SettingsTest, ProfilesComeFromTheSharedFiles) {
  write_file(home_.path() / ".aws/credentials",
             "# comment\n[default]\naws_access_key_id=DEFKEY\naws_secret_access_key=defsecret\n"
             "[ci]\n  aws_access_key_id = CIKEY \n aws_secret_access_key = cisecret\n"
             "aws_session_token = citoken\n");
  write_file(home_.path() / ".aws/config",
             "[default]\nregion = eu-west-3\n[profile ci]\nregion = ap-east-1\n"
             "s3 =\n  endpoint_url = http://ci-store:9000\n  addressing_style = virtual\n");
  unsetenv("AWS_NO_SIGN_REQUEST");
  S3Settings s = s3_settings_from_env(source());
  EXPECT_EQ(s.credentials->current().access_key, "DEFKEY");
  EXPECT_EQ(s.region, "eu-west-3");
  EXPECT_FALSE(s.custom_endpoint);
  setenv("AWS_PROFILE", "ci", 1);
  s = s3_settings_from_env(source());
  EXPECT_EQ(s.credentials->current().access_key, "CIKEY");
  EXPECT_EQ(s.credentials->current().secret_key, "cisecret");
  EXPECT_EQ(s.credentials->current().session_token, "citoken");
  EXPECT_EQ(s.region, "ap-east-1");
  EXPECT_EQ(s3_object_url(s, "models", "k"), "http://models.ci-store:9000/k");
  setenv("AWS_PROFILE", "nobody", 1);
  EXPECT_EQ(code_of([] { s3_settings_from_env(source()); }), ErrorCode::invalid_argument);
}

TEST_F(S3SettingsTest, SharedFileLocationsComeFromTheEnvironment) {
  write_file(home_.path() / "elsewhere/creds",
             "[team]\naws_access_key_id = TEAMKEY\naws_secret_access_key = teamsecret\n");
  write_file(home_.path() / "elsewhere/conf", "[profile team]\nregion = sa-east-1\n");
  setenv("AWS_SHARED_CREDENTIALS_FILE", (home_.path() / "elsewhere/creds").c_str(), 1);
  setenv("AWS_CONFIG_FILE", (home_.path() / "elsewhere/conf").c_str(), 1);
  setenv("AWS_DEFAULT_PROFILE", "team", 1);
  unsetenv("AWS_NO_SIGN_REQUEST");
  S3Settings s = s3_settings_from_env(source());
  EXPECT_EQ(s.credentials->current().access_key, "TEAMKEY");
  EXPECT_EQ(s.region, "sa-east-1");
}

TEST_F(S3SettingsTest, SignedTargetsCarryTheirHeadersAndNoSecretInTheirName) {
  S3Settings s = s3_settings_from_env(source("eu-west-1", "http://h:1"));
  HttpTarget anonymous = s3_target(s, "models", "a b");
  EXPECT_EQ(anonymous.name, "s3://models/a b");
  EXPECT_FALSE(anonymous.signing);
  EXPECT_TRUE(anonymous.headers.empty());
  s.credentials = std::make_shared<AwsCredentialProvider>(
      "test keys", AwsCredentials{"AKID", "s3cr3t", "t0ken", {}});
  HttpTarget signed_target = s3_target(s, "models", "a b");
  ASSERT_TRUE(signed_target.signing);
  EXPECT_EQ(signed_target.signing->region, "eu-west-1");
  EXPECT_EQ(signed_target.signing->service, "s3");
  EXPECT_EQ(signed_target.headers.at("x-amz-content-sha256"),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  // The token is added to each request from the provider's current credentials.
  EXPECT_FALSE(signed_target.headers.contains("x-amz-security-token"));
  EXPECT_EQ(signed_target.signing->credentials->current().session_token, "t0ken");
  EXPECT_EQ(signed_target.name.find("s3cr3t"), std::string::npos);
  EXPECT_EQ(signed_target.url.find("s3cr3t"), std::string::npos);
}

TEST(IniFile, ParsesSectionsNestedBlocksAndIgnoresGarbage) {
  IniFile ini = parse_ini(
      "stray = before any section\n[a]\nx = 1\n; comment\n# comment\nno equals sign\n"
      "= no key\ns3 =\n  max = 5\n  addressing_style = path\ny = 2 = 3\n[ b ]\r\nz=\r\n"
      "[unterminated\n   [indented]\n");
  ASSERT_EQ(ini.size(), 2u);
  EXPECT_EQ(ini["a"]["x"], "1");
  EXPECT_EQ(ini["a"]["s3.max"], "5");
  EXPECT_EQ(ini["a"]["s3.addressing_style"], "path");
  EXPECT_EQ(ini["a"]["y"], "2 = 3");
  EXPECT_EQ(ini["b"]["z"], "");
  EXPECT_TRUE(parse_ini("").empty());
  EXPECT_TRUE(parse_ini(std::string(100000, '[')).empty());
}

TEST(IniFile, OverlongKeysAreIgnoredSoNestedBlocksCannotAmplify) {
  // A 512 KiB parent key over thousands of nested lines would be stored once per line.
  std::string text = "[p]\n" + std::string(512 << 10, 'k') + " =\n";
  for (int i = 0; i < 10000; ++i) text += "  k" + std::to_string(i) + " = v\n";
  text += std::string(kMaxIniKeyBytes, 'a') + " = longest\n";
  IniFile ini = parse_ini(text);
  ASSERT_EQ(ini.size(), 1u);
  // The overlong parent is ignored, so its nested lines are plain keys of their own.
  EXPECT_EQ(ini["p"].size(), 10001u);
  EXPECT_EQ(ini["p"]["k9999"], "v");
  EXPECT_EQ(ini["p"][std::string(kMaxIniKeyBytes, 'a')], "longest");
}

TEST(IniFile, OversizedFilesAreRefusedAndMissingOnesAbsent) {
  TempDir dir;
  EXPECT_FALSE(read_ini_file(dir.path() / "absent"));
  write_file(dir.path() / "big", std::string(kMaxIniBytes + 1, 'x'));
  EXPECT_EQ(code_of([&] { read_ini_file(dir.path() / "big"); }), ErrorCode::limit_exceeded);
  write_file(dir.path() / "ok", "[p]\nk = v\n");
  EXPECT_EQ((*read_ini_file(dir.path() / "ok"))["p"]["k"], "v");
}

}  // namespace
}  // namespace ballast::test
