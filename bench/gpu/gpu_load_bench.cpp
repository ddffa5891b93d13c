// GB/s into CUDA device memory: ballast's loads (page cache through pread and io_uring, an
// O_DIRECT read, casts on load, GPUDirect Storage through cuFile) against the bound of the
// same bytes copied by one cudaMemcpy from pinned host memory, in one run on one machine. Also
// the peak pinned staging against its budget and the device memory a load takes beyond its
// tensors. The pipeline's rows turn GPUDirect Storage off; the GDS row requires it (an error
// in its row when libcufile or the file system refuses) and says whether cuFile ran through
// nvidia-fs or in its compatibility mode. Prints one JSON object.
//
//   gpu_load_bench FILE.safetensors [--threads N] [--staging BYTES] [--runs N]
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ballast/ballast.hpp"
#include "ballast/cuda.hpp"
#include "cuda/cuda_backend.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using ballast::Device;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw std::runtime_error(fmt::format("{}: {}", what, cudaGetErrorString(status)));
}

uint64_t device_used() {
  size_t free = 0, total = 0;
  check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
  return total - free;
}

// One cudaMemcpy of the file's bytes from pinned host memory: the bus's bound.
double pinned_memcpy_seconds(const std::string& path, uint64_t bytes, int runs) {
  void* host = nullptr;
  void* device = nullptr;
  check(cudaHostAlloc(&host, bytes, cudaHostAllocDefault), "cudaHostAlloc");
  check(cudaMalloc(&device, bytes), "cudaMalloc");
  std::ifstream(path, std::ios::binary).read(static_cast<char*>(host), std::streamsize(bytes));
  double best = 1e30;
  for (int i = 0; i < runs; ++i) {
    const auto start = Clock::now();
    check(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
    best = std::min(best, seconds_since(start));
  }
  cudaFree(device);
  cudaFreeHost(host);
  return best;
}

struct LoadResult {
  double seconds = 1e30;
  uint64_t tensor_bytes = 0;
  uint64_t extra_device_bytes = 0;  // device memory in use beyond the tensors, at the end
};

LoadResult load_seconds(const std::string& path, ballast::ReadMode mode,
                        std::optional<ballast::DType> cast, int threads, uint64_t staging, int runs,
                        ballast::GpuDirectStorage gds = ballast::GpuDirectStorage::off) {
  LoadResult result;
  const auto source = ballast::WeightSource::file(path);
  for (int i = 0; i < runs; ++i) {
    const uint64_t before = device_used();
    auto loader = ballast::make_weight_loader({.read_mode = mode,
                                               .num_threads = threads,
                                               .max_staging_bytes = staging,
                                               .gpu_direct_storage = gds});
    std::vector<ballast::TensorSpec> specs;
    for (const auto& [name, info] : loader->get_metadata(source).tensors) {
      ballast::TensorSpec spec{.name = name, .device = Device::cuda(0), .source = source};
      if (cast && info.dtype == ballast::DType::bf16)
        spec.transformations.push_back(ballast::Cast{*cast});
      specs.push_back(std::move(spec));
    }
    const auto start = Clock::now();
    const auto tensors = loader->load_tensors(std::move(specs));
    result.seconds = std::min(result.seconds, seconds_since(start));
    uint64_t bytes = 0;
    for (const auto& t : tensors) bytes += t->nbytes();
    result.tensor_bytes = bytes;
    const uint64_t used = device_used() - before;
    result.extra_device_bytes = used > bytes ? used - bytes : 0;
  }
  return result;
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc < 2) {
    std::fprintf(stderr, "usage: gpu_load_bench FILE [--threads N] [--staging BYTES] [--runs N]\n");
    return 2;
  }
  const std::string path = argv[1];
  int threads = 16, runs = 3;
  uint64_t staging = 256ull << 20;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--threads") threads = std::stoi(argv[i + 1]);
    if (flag == "--staging") staging = std::stoull(argv[i + 1]);
    if (flag == "--runs") runs = std::stoi(argv[i + 1]);
  }
  if (ballast::cuda_device_count() == 0) {
    std::fprintf(stderr, "no CUDA device\n");
    return 77;
  }
  const uint64_t file_bytes = std::filesystem::file_size(path);
  const double bound = pinned_memcpy_seconds(path, file_bytes, runs);
  nlohmann::json out;
  out["file_bytes"] = file_bytes;
  out["threads"] = threads;
  out["staging_bytes"] = staging;
  out["bound_pinned_memcpy_gbps"] = double(file_bytes) / bound / 1e9;
  using ballast::ReadMode;
  const LoadResult plain = load_seconds(path, ReadMode::automatic, {}, threads, staging, runs);
  auto report = [&](const char* name, const LoadResult& r, uint64_t wire_bytes) {
    const double gbps = double(wire_bytes) / r.seconds / 1e9;
    out[name] = {{"seconds", r.seconds},
                 {"gbps", gbps},
                 {"ratio_to_bound", gbps / out["bound_pinned_memcpy_gbps"].get<double>()},
                 {"tensor_bytes", r.tensor_bytes},
                 {"extra_device_bytes", r.extra_device_bytes}};
  };
  // GB/s count the file's tensor bytes (what crosses the bus), also for casts.
  report("ballast_page_cache", plain, plain.tensor_bytes);
  report("ballast_io_uring", load_seconds(path, ReadMode::io_uring, {}, threads, staging, runs),
         plain.tensor_bytes);
  const LoadResult f32 =
      load_seconds(path, ReadMode::automatic, ballast::DType::f32, threads, staging, runs);
  report("ballast_cast_bf16_f32", f32, plain.tensor_bytes);
  out["ballast_cast_bf16_f32"]["cost_over_plain"] = f32.seconds / plain.seconds - 1;
  const LoadResult fp8 =
      load_seconds(path, ReadMode::automatic, ballast::DType::f8_e4m3, threads, staging, runs);
  report("ballast_cast_bf16_fp8", fp8, plain.tensor_bytes);
  out["ballast_cast_bf16_fp8"]["cost_over_plain"] = fp8.seconds / plain.seconds - 1;
  report("ballast_o_direct", load_seconds(path, ReadMode::direct, {}, threads, staging, 1),
         plain.tensor_bytes);
  try {
    report("ballast_gds",
           load_seconds(path, ReadMode::direct, {}, threads, staging, 1,
                        ballast::GpuDirectStorage::required),
           plain.tensor_bytes);
  } catch (const ballast::Error& e) {
    out["ballast_gds"] = {{"error", e.what()}};
  }
  // Without the nvidia-fs module cuFile runs in its compatibility mode (POSIX reads into its
  // own buffers, then a copy): a GDS figure then measures that, not DMA from the storage.
  out["ballast_gds"]["mode"] = std::filesystem::exists("/proc/driver/nvidia-fs")
                                   ? "nvidia-fs"
                                   : "cuFile compatibility mode (no nvidia-fs)";
  out["peak_pinned_bytes"] = ballast::cuda_backend(0)->peak_pinned_bytes();
  out["peak_pinned_within_budget"] = ballast::cuda_backend(0)->peak_pinned_bytes() <= staging;
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "gpu_load_bench: %s\n", e.what());
  return 1;
}
