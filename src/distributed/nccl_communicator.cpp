// The NCCL Communicator (ballast/nccl_communicator.hpp): NCCL's collectives on one CUDA stream
// of the rank's device, each waited for before the call returns. The only file that sees nccl.h
// and the CUDA runtime's API.
#include "ballast/nccl_communicator.hpp"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <fmt/format.h>

#include "ballast/error.hpp"

namespace ballast {
namespace {

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(Communicator& host, int device) : host_(host), device_(device) {
    std::exception_ptr failure;
    ncclUniqueId id{};
    try {
      int count = 0;
      if (cudaGetDeviceCount(&count) != cudaSuccess) count = 0;
      if (device < 0 || device >= count)
        throw Error(ErrorCode::unsupported,
                    fmt::format("NCCL communicator: no CUDA device {} on rank {} ({} devices)",
                                to_string(Device::cuda(device)), host.rank(), count));
      check_cuda(cudaSetDevice(device_), "cudaSetDevice");
      check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
      check_cuda(cudaMalloc(&scalar_, sizeof(int64_t)), "cudaMalloc");
      if (host.rank() == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    } catch (...) {
      failure = std::current_exception();
    }
    try {
      agree_on_failure(host_, failure, "starting NCCL");
      host_.broadcast(std::as_writable_bytes(std::span(&id, 1)), 0);
      failure = nullptr;
      try {
        check_nccl(ncclCommInitRank(&comm_, host.size(), id, host.rank()), "ncclCommInitRank");
      } catch (...) {
        failure = std::current_exception();
      }
      agree_on_failure(host_, failure, "starting NCCL");
    } catch (...) {
      release();
      throw;
    }
  }
  ~NcclCommunicator() override { release(); }
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override { return host_.rank(); }
  int size() const override { return host_.size(); }
  Device memory_device() const override { return Device::cuda(device_); }
  Communicator& control() override { return host_; }

  void allgatherv_in_place(std::span<std::byte> buffer, std::span<const uint64_t> counts,
                           std::span<const uint64_t> displacements) override {
    use_device();
    const auto me = static_cast<size_t>(rank());
    if (contiguous_equal_parts(counts, displacements)) {
      std::byte* base = buffer.data() + displacements[0];
      check_nccl(ncclAllGather(base + displacements[me] - displacements[0], base, counts[0],
                               ncclChar, comm_, stream_),
                 "ncclAllGather");
    } else {
      check_nccl(ncclGroupStart(), "ncclGroupStart");
      for (size_t r = 0; r < counts.size(); ++r) {
        std::byte* part = buffer.data() + displacements[r];
        check_nccl(
            ncclBroadcast(part, part, counts[r], ncclChar, static_cast<int>(r), comm_, stream_),
            "ncclBroadcast");
      }
      check_nccl(ncclGroupEnd(), "ncclGroupEnd");
    }
    wait();
  }

  void alltoallv(std::span<const std::byte> send, std::span<const uint64_t> send_counts,
                 std::span<const uint64_t> send_displacements, std::span<std::byte> recv,
                 std::span<const uint64_t> recv_counts,
                 std::span<const uint64_t> recv_displacements) override {
    use_device();
    check_nccl(ncclGroupStart(), "ncclGroupStart");
    for (size_t r = 0; r < send_counts.size(); ++r) {
      const int peer = static_cast<int>(r);
      if (send_counts[r] > 0)
        check_nccl(ncclSend(send.data() + send_displacements[r], send_counts[r], ncclChar, peer,
                            comm_, stream_),
                   "ncclSend");
      if (recv_counts[r] > 0)
        check_nccl(ncclRecv(recv.data() + recv_displacements[r], recv_counts[r], ncclChar, peer,
                            comm_, stream_),
                   "ncclRecv");
    }
    check_nccl(ncclGroupEnd(), "ncclGroupEnd");
    wait();
  }

  void broadcast(std::span<std::byte> bytes, int root) override {
    use_device();
    check_nccl(
        ncclBroadcast(bytes.data(), bytes.data(), bytes.size(), ncclChar, root, comm_, stream_),
        "ncclBroadcast");
    wait();
  }

  int64_t allreduce_max(int64_t value) override {
    use_device();
    check_cuda(cudaMemcpyAsync(scalar_, &value, sizeof value, cudaMemcpyHostToDevice, stream_),
               "cudaMemcpyAsync");
    check_nccl(ncclAllReduce(scalar_, scalar_, 1, ncclInt64, ncclMax, comm_, stream_),
               "ncclAllReduce");
    int64_t out = 0;
    check_cuda(cudaMemcpyAsync(&out, scalar_, sizeof out, cudaMemcpyDeviceToHost, stream_),
               "cudaMemcpyAsync");
    wait();
    return out;
  }

 private:
  // Parts of equal size, one after another in rank order: one ncclAllGather.
  static bool contiguous_equal_parts(std::span<const uint64_t> counts,
                                     std::span<const uint64_t> displacements) {
    for (size_t r = 0; r < counts.size(); ++r)
      if (counts[r] != counts[0] || displacements[r] != displacements[0] + r * counts[0])
        return false;
    return !counts.empty();
  }

  void use_device() const { check_cuda(cudaSetDevice(device_), "cudaSetDevice"); }

  void wait() const {
    check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    ncclResult_t async = ncclSuccess;
    check_nccl(ncclCommGetAsyncError(comm_, &async), "ncclCommGetAsyncError");
    check_nccl(async, "an NCCL collective");
  }

  void check_cuda(cudaError_t status, const char* call) const {
    if (status == cudaSuccess) return;
    throw Error(ErrorCode::network,
                fmt::format("{} on {} failed: {}", call, to_string(Device::cuda(device_)),
                            cudaGetErrorString(status)));
  }

  void check_nccl(ncclResult_t status, const char* call) const {
    if (status == ncclSuccess) return;
    const char* detail = comm_ ? ncclGetLastError(comm_) : ncclGetLastError(nullptr);
    throw Error(ErrorCode::network,
                fmt::format("{} on {} (rank {} of {}) failed: {}{}{}", call,
                            to_string(Device::cuda(device_)), host_.rank(), host_.size(),
                            ncclGetErrorString(status), detail && *detail ? ": " : "",
                            detail ? detail : ""));
  }

  void release() noexcept {
    if (comm_ || scalar_ || stream_) cudaSetDevice(device_);
    if (comm_) ncclCommDestroy(comm_);
    if (scalar_) cudaFree(scalar_);
    if (stream_) cudaStreamDestroy(stream_);
    comm_ = nullptr;
    scalar_ = nullptr;
    stream_ = nullptr;
  }

  Communicator& host_;
  int device_ = 0;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  int64_t* scalar_ = nullptr;
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(Communicator& host, int device) {
  return std::make_unique<NcclCommunicator>(host, device);
}

}  // namespace ballast
