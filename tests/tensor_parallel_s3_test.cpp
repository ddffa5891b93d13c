// A tensor-parallel rank loading from S3 (moto behind the signature-checking proxy), caching
// off, fetches only its bytes: per rank, 1/world of the tensor for row and column shards (the
// proxy's log of GET bytes), plus the header fetched by get_metadata.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <fmt/format.h>

#include "ballast/ballast.hpp"
#include "support/aws_environment.hpp"
#include "support/s3_server.hpp"
#include "support/safetensors_writer.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

S3Server& server() { return process_wide<S3Server>(); }

// Long-term keys, the server's endpoint and region, and an empty HOME (no ~/.aws of the
// machine's), as in s3_source_test.
class TensorParallelS3 : public AwsIsolatedTest {
 protected:
  void SetUp() override {
    AwsIsolatedTest::SetUp();
    BALLAST_REQUIRE_S3(server());
    setenv("AWS_ACCESS_KEY_ID", S3Server::kKeys.access_key.c_str(), 1);
    setenv("AWS_SECRET_ACCESS_KEY", S3Server::kKeys.secret_key.c_str(), 1);
    setenv("AWS_REGION", S3Server::kRegion, 1);
    setenv("AWS_ENDPOINT_URL", server().endpoint().c_str(), 1);
  }
};

TEST_F(TensorParallelS3, RankFetchesOnlyItsBytes) {
  std::vector<float> values(32 * 32768);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i);
  server().put("models", "tp.safetensors",
               safetensors_file({{"w", "F32", {32, 32768}, f32_bytes(values)}}));
  WeightLoaderConfig config;
  config.enable_caching = false;
  config.download_timeout_seconds = 10;
  config.download_retries = 1;
  const auto source = WeightSource::s3("models", "tp.safetensors");
  const uint64_t quarter = 32 * 32768 * 4 / 4;
  for (const int dim : {0, 1})
    for (int rank = 0; rank < 4; ++rank) {
      SCOPED_TRACE(fmt::format("dim {} rank {}", dim, rank));
      auto loader = make_weight_loader(config);
      (void)loader->get_metadata(source);
      server().clear_log();
      auto t = loader->load_tensor(TensorSpec{
          .name = "w",
          .source = source,
          .transformations = parse_transformations(fmt::format("shard:{}/4:{}", rank, dim))});
      EXPECT_EQ(server().get_bytes(), quarter);
      EXPECT_EQ(t->nbytes(), quarter);
    }
}

}  // namespace
}  // namespace ballast::test
