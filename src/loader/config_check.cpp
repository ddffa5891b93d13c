// Range checks of a loader configuration (see config_check.hpp).
#include "loader/config_check.hpp"

#include <algorithm>
#include <thread>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "util/control_characters.hpp"

namespace ballast {
namespace {

template <typename Value>
void check_range(const char* field, Value value, Value min, Value max, const char* note = "") {
  if (value >= min && value <= max) return;
  throw Error(ErrorCode::invalid_argument,
              fmt::format("{} must be in [{}, {}]{}, got {}", field, min, max, note, value));
}

}  // namespace

unsigned worker_thread_count(const WeightLoaderConfig& config) {
  if (config.num_threads > 0) return static_cast<unsigned>(config.num_threads);
  return std::max(1u, std::thread::hardware_concurrency());
}

void check_weight_loader_config(const WeightLoaderConfig& config) {
  check_range("num_threads", config.num_threads, 0, kMaxNumThreads, " (0: one per core)");
  if (config.alignment < 16 || (config.alignment & (config.alignment - 1)) != 0 ||
      config.alignment > 4096)
    throw Error(
        ErrorCode::invalid_argument,
        fmt::format("alignment must be a power of two in [16, 4096], got {}", config.alignment));
  check_range("read_chunk_bytes", config.read_chunk_bytes, kMinChunkBytes, kMaxChunkBytes);
  // Every thread gets at least one 4 KiB page of bounce buffer.
  check_range("max_staging_bytes", config.max_staging_bytes,
              uint64_t{4096} * worker_thread_count(config), kMaxChunkBytes,
              " (at least 4 KiB per worker thread)");
  check_range("download_chunk_bytes", config.download_chunk_bytes, kMinChunkBytes, kMaxChunkBytes);
  check_range("max_concurrent_downloads", config.max_concurrent_downloads, 1,
              kMaxConcurrentDownloads);
  check_range("download_retries", config.download_retries, 0, kMaxDownloadRetries);
  // NaN fails both comparisons; 0 and below are not a timeout.
  if (!(config.download_timeout_seconds > 0 &&
        config.download_timeout_seconds <= kMaxDownloadTimeoutSeconds))
    throw Error(ErrorCode::invalid_argument,
                fmt::format("download_timeout_seconds must be in (0, {}], got {}",
                            kMaxDownloadTimeoutSeconds, config.download_timeout_seconds));
  check_http_headers(config.default_headers, "default_headers");
}

}  // namespace ballast
