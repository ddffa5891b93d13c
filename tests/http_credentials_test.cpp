// Secrets never leave for another origin and never reach output (issue 30, class 1), against
// tests/servers/fault_server.py on 127.0.0.1: a redirect (301, 302, 303, 307, 308) to another
// port carries none of the caller's headers (Authorization, cookies, API keys, the config's
// default headers); one to the same origin keeps them; a signed S3 request is refused at a
// redirect to another origin and re-signed at one to the same origin; and URL user-info and
// query signatures appear in no CLI output, progress line or cache record.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <string_view>

#include "ballast/ballast.hpp"
#include "support/aws_environment.hpp"
#include "support/fault_server.hpp"

namespace ballast::test {
namespace {

using nlohmann::json;

const char* const kSecrets[] = {"secret-token", "c00kie", "k3y",      "d3fault", "hunter2",
                                "s3cr3t",       "t0ken",  "AKIDTEST", "sess10n", "w1ldsecret"};

// The caller's headers: credentials of every kind, per source and from the config.
WeightSource with_credentials(const std::string& url) {
  return WeightSource::url(url, {{"Authorization", "Bearer secret-token"},
                                 {"Cookie", "session=c00kie"},
                                 {"X-Api-Key", "k3y"}});
}

WeightLoaderConfig with_default_headers(WeightLoaderConfig c) {
  c.default_headers = {{"X-Default-Token", "d3fault"}};
  return c;
}

// A header the server recorded, by name in any case ("" when absent).
std::string header(const json& headers, std::string_view name) {
  auto lower = [](std::string_view text) {
    std::string out(text);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  };
  for (const auto& [key, value] : headers.items())
    if (lower(key) == lower(name)) return value.get<std::string>();
  return "";
}

void expect_no_secret(const std::string& text) {
  for (const char* secret : kSecrets) EXPECT_EQ(text.find(secret), std::string::npos) << text;
}

TEST_F(FaultServer, RedirectsToAnotherOriginCarryNoCallerHeaders) {
  for (int code : {301, 302, 303, 307, 308}) {
    SCOPED_TRACE(code);
    expect_exact(with_credentials(url("hop/" + std::to_string(code) + "/m.safetensors")),
                 with_default_headers(config()));
  }
  expect_exact(with_credentials(url("auth/m.safetensors")), with_default_headers(config()));
  const json seen = stats()["other_headers"];
  ASSERT_FALSE(seen.empty());
  for (const auto& headers : seen) {
    expect_no_secret(headers.dump());
    for (const char* name : {"Authorization", "Cookie", "X-Api-Key", "X-Default-Token"})
      EXPECT_EQ(header(headers, name), "") << headers.dump();
  }
}

TEST_F(FaultServer, RedirectsWithinTheOriginKeepTheCallerHeaders) {
  expect_exact(with_credentials(url("samehop/307/m.safetensors")), with_default_headers(config()));
  const json seen = stats()["seen_headers"];
  ASSERT_FALSE(seen.empty());
  for (const auto& headers : seen) {
    EXPECT_EQ(header(headers, "Authorization"), "Bearer secret-token");
    EXPECT_EQ(header(headers, "X-Api-Key"), "k3y");
    EXPECT_EQ(header(headers, "X-Default-Token"), "d3fault");
  }
}

// S3 through the fault server: the endpoint's path ("/hop/307") comes before /bucket/key.
class SignedRedirect : public FaultServer {
 protected:
  void SetUp() override {
    FaultServer::SetUp();
    clear_aws_environment();
    setenv("AWS_ACCESS_KEY_ID", "AKIDTEST", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "w1ldsecret", 1);
    setenv("AWS_SESSION_TOKEN", "sess10n", 1);
    std::filesystem::create_directories(dir_ / "bucket");
    std::filesystem::copy_file(dir_ / "m.safetensors", dir_ / "bucket" / "m.safetensors");
  }
  void TearDown() override { clear_aws_environment(); }

  WeightSource s3(const std::string& endpoint_path) const {
    return WeightSource::s3("bucket", "m.safetensors", "us-east-1", url(endpoint_path));
  }
};

TEST_F(SignedRedirect, SignedRequestsAreRefusedAtARedirectToAnotherOrigin) {
  for (const char* code : {"301", "302", "307", "308"}) {
    SCOPED_TRACE(code);
    std::string what;
    EXPECT_EQ(error_of(s3(std::string("hop/") + code), config(), &what), ErrorCode::network);
    EXPECT_NE(what.find("redirect"), std::string::npos) << what;
    expect_no_secret(what);
  }
  EXPECT_TRUE(stats()["other_headers"].empty()) << "nothing signed reaches the other origin";
}

TEST_F(SignedRedirect, SignedRequestsAreSignedAgainWithinTheOrigin) {
  expect_exact(s3("samehop/307"), config());
  const json seen = stats()["seen_headers"];
  ASSERT_FALSE(seen.empty());
  for (const auto& headers : seen) {
    const std::string authorization = header(headers, "Authorization");
    EXPECT_TRUE(authorization.starts_with("AWS4-HMAC-SHA256 Credential=AKIDTEST/"))
        << authorization;
    EXPECT_EQ(header(headers, "X-Amz-Security-Token"), "sess10n");
  }
}

// Every CLI output of a URL with user-info and a signed query: the text, --json, progress and
// the cache record show the redacted URL.
TEST_F(FaultServer, CliOutputsNeverShowUrlCredentials) {
  const std::string secret_url = "http://user:hunter2@127.0.0.1:" + std::to_string(port_) +
                                 "/ok/m.safetensors?X-Amz-Signature=s3cr3t&token=t0ken";
  const std::string redacted =
      "http://<redacted>@127.0.0.1:" + std::to_string(port_) + "/ok/m.safetensors?<redacted>";
  TempDir cache;
  const std::string source = shell_quote(secret_url) + " --cache-dir " +
                             shell_quote(cache.path().string()) + " --timeout 10 --retries 1";
  for (const char* command : {"inspect", "inspect --json", "load --json", "load", "hash", "fetch",
                              "inspect --no-cache", "load --json --no-cache"}) {
    SCOPED_TRACE(command);
    auto r = run_command(cli_path() + " " + command + " " + source);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    expect_no_secret(r.out + r.err);
    if (std::string(command).find("json") != std::string::npos) {
      EXPECT_EQ(json::parse(r.out)["source"], redacted);
    }
  }
  auto fetch = run_command(cli_path() + " fetch " + source);
  EXPECT_NE(fetch.out.find(redacted), std::string::npos) << fetch.out;
  const auto out = (cache / "converted.safetensors").string();
  auto convert = run_command(cli_path() + " convert " + source + " " + shell_quote(out));
  ASSERT_EQ(convert.exit_code, 0) << convert.err;
  const json meta = json::parse(run_command(cli_path() + " inspect --json " + out).out);
  EXPECT_EQ(meta["metadata"]["source"], redacted);
  for (const auto& entry : std::filesystem::directory_iterator(cache / "objects"))
    if (entry.path().extension() == ".json") expect_no_secret(read_file(entry.path()));
}

TEST_F(FaultServer, ErrorsNeverShowUrlCredentials) {
  const std::string secret_url = "http://user:hunter2@127.0.0.1:" + std::to_string(port_) +
                                 "/ok/missing.safetensors?sig=s3cr3t&X-Amz-Security-Token=t0ken";
  auto r = run_command(cli_path() + " inspect " + shell_quote(secret_url));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("not_found"), std::string::npos) << r.err;
  expect_no_secret(r.out + r.err);
}

}  // namespace
}  // namespace ballast::test
