// WeightLoaderConfig (how a loader behaves) and WeightLoaderCapabilities (what it can do).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ballast/device.hpp"
#include "ballast/format.hpp"
#include "ballast/limits.hpp"
#include "ballast/tensor.hpp"

namespace ballast {

// How local bytes are read (README "Read modes"). Every mode but `mmap` reads into owned,
// aligned buffers in concurrent chunks on the loader's threads.
//  - automatic: a zero-copy view of a mapped file when the tensor needs no transform, the file
//    is on a local file system and is mostly in the page cache; otherwise chunked pread.
//  - mmap: map every file (also on network file systems); owned buffers only when a transform
//    needs them.
//  - read: chunked pread into owned buffers.
//  - io_uring: like read, through io_uring (liburing); pread where io_uring is unavailable.
//  - direct: O_DIRECT through aligned bounce buffers, bypassing the page cache (cold reads),
//    with io_uring when available; buffered reads where the file system refuses O_DIRECT.
enum class ReadMode : uint8_t { automatic, mmap, read, io_uring, direct };

std::string_view read_mode_name(ReadMode mode);

// Whether loads to a CUDA device read files straight into device memory with GPUDirect Storage
// (cuFile, docs/gpu.md "GPUDirect Storage") instead of through the pinned staging ring. Only
// plain reads of a local file qualify: contiguous, native byte order, no step or one cast the
// device runs.
//  - automatic: GDS where libcufile loads, its driver opens, the file registers and the
//    nvidia-fs kernel module is loaded; the pinned pipeline otherwise (cuFile's compatibility
//    mode, without nvidia-fs, reads through the page cache and a copy: no faster).
//  - off: always the pinned pipeline.
//  - required: GDS for every device load, also in cuFile's compatibility mode; a load that
//    cannot use it fails with `unsupported` naming the device and the reason.
enum class GpuDirectStorage : uint8_t { automatic, off, required };

// Whether the caller may write zero-copy views of local files in place (Storage::writable()).
// A writable view is a private copy-on-write mapping: a write copies the page for this process
// and never reaches the file. Where such a mapping cannot be made, tensors are read into owned
// buffers instead. Views of a memory source's bytes stay read-only views of them.
enum class MappedWrites : uint8_t {
  refused,   // read-only mappings, shared by every call of the loader
  per_call,  // a mapping per load call: a write never reaches another call's tensors
  // One mapping per file for the loader's life: tensors of different calls that view the same
  // bytes share each other's writes (as the tensors of one safetensors safe_open handle do).
  per_loader,
};

// How far one download into a cache has got (see WeightLoaderConfig::on_download_progress).
struct DownloadProgress {
  std::string source;  // the redacted URL or hf:// name
  uint64_t bytes_done = 0;
  uint64_t bytes_total = 0;
};

// The ranges make_weight_loader accepts (the CLI's and the Python Loader's too); a value
// outside its range is Error(invalid_argument) naming the field, the value and the range.
inline constexpr int kMaxNumThreads = 4096;
inline constexpr int kMaxConcurrentDownloads = 256;
inline constexpr int kMaxDownloadRetries = 100;
inline constexpr double kMaxDownloadTimeoutSeconds = 86400;  // one day
inline constexpr uint64_t kMinChunkBytes = 4096;
inline constexpr uint64_t kMaxChunkBytes = uint64_t{1} << 40;  // chunk and staging sizes: 1 TiB

struct WeightLoaderConfig {
  // Remote sources (docs/remote.md). With caching off, remote reads fetch only the byte ranges
  // a request needs; with it on, whole files are downloaded once into the cache.
  bool enable_caching = true;
  std::filesystem::path cache_dir;           // empty: $BALLAST_CACHE or ~/.cache/ballast
  uint64_t max_cache_size = 0;               // bytes; 0 = unbounded
  int max_concurrent_downloads = 8;          // concurrent ranges of one large read (1..256)
  uint64_t download_chunk_bytes = 16 << 20;  // a large read is split into ranges of this size
  // Connect timeout, and the longest a transfer may make no progress, in seconds (0, 86400].
  double download_timeout_seconds = 300.0;
  int download_retries = 5;  // retries of a failed request (connection errors, 429, 5xx): 0..100
  bool enable_integrity_checks = true;
  // Sent with every HTTP request; names are HTTP tokens, values hold no control character
  // but tab (invalid_argument otherwise).
  std::map<std::string, std::string> default_headers;
  // CA certificates for TLS; empty: $BALLAST_CA_BUNDLE, $CURL_CA_BUNDLE or the system's.
  std::filesystem::path ca_bundle;
  bool verify_tls = true;
  // Called from download threads as downloads into a cache proceed (preload, `ballast fetch`).
  std::function<void(const DownloadProgress&)> on_download_progress;

  ReadMode read_mode = ReadMode::automatic;
  MappedWrites mapped_writes = MappedWrites::refused;
  int num_threads = 0;    // worker threads, 0..4096; 0 = hardware concurrency
  size_t alignment = 64;  // alignment of owned tensor buffers (power of two, 16..4096)
  // Reads larger than this are split into chunks loaded concurrently (4 KiB..1 TiB, as are
  // download_chunk_bytes and max_staging_bytes).
  uint64_t read_chunk_bytes = 16 << 20;
  // Bounce and staging memory (O_DIRECT buffers, copies of strided views) never exceeds this,
  // summed over all threads; a strided view larger than its share is read in place instead.
  // At least 4 KiB per thread.
  uint64_t max_staging_bytes = 64 << 20;
  GpuDirectStorage gpu_direct_storage = GpuDirectStorage::automatic;  // device loads' reads
  Limits limits;
  // Allocators per device; the CPU one is always present.
  std::vector<std::shared_ptr<TensorFactory>> factories;
};

struct WeightLoaderCapabilities {
  std::vector<WeightFormat> formats;
  std::vector<std::string> sources;          // "file", "memory", ...
  std::vector<std::string> transformations;  // "transpose", "cast", ...
  std::vector<Device::Kind> devices;
  uint64_t max_tensor_size = 0;
  bool supports_streaming = false;
  bool supports_concurrent_loading = false;
  Limits limits;
};

}  // namespace ballast
