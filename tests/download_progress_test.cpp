// Download progress as bytes arrive: a download by concurrent ranged GETs lands a whole piece
// (chunk x connections, 128 MiB by default) before it is written, so progress is reported from
// the reading threads, in order, never going backwards, and ends at the object's size.
#include <gtest/gtest.h>

#include <mutex>

#include "ballast/ballast.hpp"
#include "support/nginx_server.hpp"
#include "support/safetensors_writer.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

TEST(DownloadProgress, RangedDownloadsReportBytesAsTheyArriveInOrder) {
  NginxServer nginx;
  BALLAST_REQUIRE_NGINX(nginx);
  const std::string big(24u << 20, '\x01');
  write_file(nginx.files() / "m.safetensors", safetensors_file({{"w", "U8", {24 << 20}, big}}));
  TempDir cache;
  std::mutex mutex;
  std::vector<uint64_t> reports;
  uint64_t total = 0;
  WeightLoaderConfig config;
  config.cache_dir = cache.path();
  config.download_chunk_bytes = 1 << 20;  // 8 connections: one 8 MiB piece at a time
  config.on_download_progress = [&](const DownloadProgress& p) {
    std::lock_guard lock(mutex);
    reports.push_back(p.bytes_done);
    total = p.bytes_total;
  };
  const WeightSource source = WeightSource::url(nginx.url("files/m.safetensors"));
  make_weight_loader(config)->preload(source);

  std::lock_guard lock(mutex);
  ASSERT_FALSE(reports.empty());
  EXPECT_EQ(reports.back(), total);
  EXPECT_TRUE(std::is_sorted(reports.begin(), reports.end()));
  // Many reports inside each 8 MiB piece, not one per piece (three pieces and a header).
  EXPECT_GT(reports.size(), 24u) << reports.size() << " reports";
  EXPECT_TRUE(std::any_of(reports.begin(), reports.end(),
                          [&](uint64_t done) { return done > 0 && done < (8u << 20); }));
}

}  // namespace
}  // namespace ballast::test
