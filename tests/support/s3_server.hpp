// An S3-compatible server for tests: moto's standalone server (moto[server] from PyPI, in the
// project's virtual environment) behind tests/servers/s3_proxy.py on 127.0.0.1, which
// recomputes every request's SigV4 signature with botocore and refuses mismatches as S3 does
// (moto itself does not check signatures). Objects are uploaded with boto3; the proxy's log of
// the requests that reached moto lets tests count the bytes a load fetched.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "support/process.hpp"
#include "support/test_support.hpp"

namespace ballast::test {

struct S3Keys {
  std::string access_key, secret_key, session_token;
};

class S3Server {
 public:
  static constexpr const char* kRegion = "us-west-2";
  static const S3Keys kKeys;           // a long-term key pair
  static const S3Keys kTemporaryKeys;  // a key pair that is valid only with its session token

  // Starts the servers; available() is false (with the reason in unavailable()) when the
  // virtual environment lacks moto, botocore or boto3, or a server does not start.
  S3Server();
  ~S3Server();

  bool available() const { return process_ != nullptr; }
  const std::string& unavailable() const { return why_; }
  // The proxy's process id (the leader of the process group that holds moto too), or -1.
  pid_t pid() const { return process_ ? process_->pid() : -1; }
  int port() const { return port_; }
  std::string endpoint() const;  // "http://127.0.0.1:PORT"

  // Uploads a file to bucket/key, or every file under a folder to bucket/key<relative path>,
  // with boto3 (creating the bucket). Anyone may read the bucket named "public".
  void upload(const std::string& bucket, const std::filesystem::path& local,
              const std::string& key) const;
  void put(const std::string& bucket, const std::string& key, const std::string& bytes) const;

  // Requests that reached moto since clear_log(): [{method, path, range, status, bytes}].
  nlohmann::json requests() const;
  uint64_t get_bytes() const;  // body bytes of the GETs among them
  void clear_log() const;

 private:
  TempDir dir_;
  int port_ = 0;
  std::string why_;
  std::unique_ptr<Process> process_;
};

// Ends the current test (BALLAST_MISSING) when the S3 server is unavailable.
#define BALLAST_REQUIRE_S3(server)                                      \
  do {                                                                  \
    if (!(server).available()) BALLAST_MISSING((server).unavailable()); \
  } while (0)

}  // namespace ballast::test
