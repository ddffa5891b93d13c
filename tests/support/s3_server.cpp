// moto's S3 server behind the SigV4-verifying proxy (see s3_server.hpp).
#include "support/s3_server.hpp"

#include <sstream>

namespace ballast::test {
namespace {

namespace fs = std::filesystem;

constexpr const char* kUpload = R"(
import json, os, sys, boto3
from botocore.config import Config
endpoint, region, access, secret, bucket, local, key = sys.argv[1:8]
s3 = boto3.client("s3", endpoint_url=endpoint, region_name=region, aws_access_key_id=access,
                  aws_secret_access_key=secret, config=Config(s3={"addressing_style": "path"}))
if bucket not in [b["Name"] for b in s3.list_buckets()["Buckets"]]:
    s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": region})
    if bucket == "public":
        s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps({"Statement": [{
            "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
            "Resource": "arn:aws:s3:::public/*"}]}))
if os.path.isdir(local):
    for folder, _, files in os.walk(local):
        for name in files:
            path = os.path.join(folder, name)
            s3.upload_file(path, bucket, key + os.path.relpath(path, local))
else:
    s3.upload_file(local, bucket, key)
)";

constexpr const char* kControl = R"(
import sys, urllib.request
data = b"" if sys.argv[2] == "post" else None
print(urllib.request.urlopen(sys.argv[1], data=data).read().decode())
)";

}  // namespace

const S3Keys S3Server::kKeys{"AKIDBALLASTTEST", "ballast/long+term/secret", ""};
const S3Keys S3Server::kTemporaryKeys{"ASIABALLASTTEMP", "ballast-temporary-secret",
                                      "ballast-session-token"};

S3Server::S3Server() {
  const std::string python = venv_python();
  const fs::path moto_server = fs::path(python).parent_path() / "moto_server";
  if (run_command(shell_quote(python) + " -c 'import boto3, botocore, moto.server' 2>/dev/null")
          .exit_code != 0) {
    why_ = python + " cannot import moto, boto3 and botocore (run scripts/setup.sh)";
    return;
  }
  process_ = std::make_unique<Process>(
      std::vector<std::string>{python, BALLAST_SOURCE_DIR "/tests/servers/s3_proxy.py",
                               moto_server.string(), kRegion,
                               kKeys.access_key + ":" + kKeys.secret_key,
                               kTemporaryKeys.access_key + ":" + kTemporaryKeys.secret_key + ":" +
                                   kTemporaryKeys.session_token},
      (dir_ / "proxy.log").string());
  auto line = process_->read_line(std::chrono::seconds(60));
  if (!line || !(std::istringstream(*line) >> port_)) {
    why_ = "the S3 server did not start: " + read_file(dir_ / "proxy.log");
    process_.reset();
  }
}

S3Server::~S3Server() = default;

std::string S3Server::endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

void S3Server::upload(const std::string& bucket, const fs::path& local,
                      const std::string& key) const {
  run_python(kUpload,
             {endpoint(), kRegion, kKeys.access_key, kKeys.secret_key, bucket, local.string(), key},
             venv_python());
}

void S3Server::put(const std::string& bucket, const std::string& key,
                   const std::string& bytes) const {
  TempDir staging;
  write_file(staging / "object", bytes);
  upload(bucket, staging / "object", key);
}

nlohmann::json S3Server::requests() const {
  return nlohmann::json::parse(
      run_python(kControl, {endpoint() + "/_stats", "get"}, venv_python()));
}

uint64_t S3Server::get_bytes() const {
  uint64_t total = 0;
  for (const auto& r : requests())
    if (r["method"] == "GET") total += r["bytes"].get<uint64_t>();
  return total;
}

void S3Server::clear_log() const {
  run_python(kControl, {endpoint() + "/_reset", "post"}, venv_python());
}

}  // namespace ballast::test
