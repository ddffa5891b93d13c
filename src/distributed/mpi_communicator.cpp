// The MPI Communicator (ballast/mpi_communicator.hpp): MPI's collectives on a duplicate of the
// caller's communicator, with errors returned (not fatal) and turned into Error(network).
// Counts beyond MPI's int are sent as broadcasts (all-to-all: paired sends and receives) of at
// most 1 GiB each.
#include "ballast/mpi_communicator.hpp"

#include <algorithm>
#include <climits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ballast/error.hpp"

namespace ballast {
namespace {

constexpr uint64_t kLargestMessage = uint64_t{1} << 30;

void check(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw Error(ErrorCode::network, fmt::format("{} failed: {}", call, std::string(text, length)));
}

class MpiCommunicator final : public Communicator {
 public:
  explicit MpiCommunicator(MPI_Comm comm) {
    check(MPI_Comm_dup(comm, &comm_), "MPI_Comm_dup");
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  ~MpiCommunicator() override { MPI_Comm_free(&comm_); }
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void allgatherv_in_place(std::span<std::byte> buffer, std::span<const uint64_t> counts,
                           std::span<const uint64_t> displacements) override {
    if (buffer.size() <= INT_MAX) {
      std::vector<int> c, d;
      for (size_t r = 0; r < counts.size(); ++r) {
        c.push_back(static_cast<int>(counts[r]));
        d.push_back(static_cast<int>(displacements[r]));
      }
      check(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buffer.data(), c.data(), d.data(),
                           MPI_BYTE, comm_),
            "MPI_Allgatherv");
      return;
    }
    for (int root = 0; root < size_; ++root) {
      const auto r = static_cast<size_t>(root);
      broadcast(buffer.subspan(displacements[r], counts[r]), root);
    }
  }

  void alltoallv(std::span<const std::byte> send, std::span<const uint64_t> send_counts,
                 std::span<const uint64_t> send_displacements, std::span<std::byte> recv,
                 std::span<const uint64_t> recv_counts,
                 std::span<const uint64_t> recv_displacements) override {
    if (send.size() <= INT_MAX && recv.size() <= INT_MAX) {
      auto ints = [](std::span<const uint64_t> v) {
        return std::vector<int>(v.begin(), v.end());  // each within the buffer: fits an int
      };
      const auto sc = ints(send_counts), sd = ints(send_displacements);
      const auto rc = ints(recv_counts), rd = ints(recv_displacements);
      check(MPI_Alltoallv(send.data(), sc.data(), sd.data(), MPI_BYTE, recv.data(), rc.data(),
                          rd.data(), MPI_BYTE, comm_),
            "MPI_Alltoallv");
      return;
    }
    // Shift s pairs each rank with the ranks s ahead (to) and s behind (from).
    for (int shift = 0; shift < size_; ++shift) {
      const auto to = static_cast<size_t>((rank_ + shift) % size_);
      const auto from = static_cast<size_t>((rank_ - shift + size_) % size_);
      std::vector<MPI_Request> requests;
      for (uint64_t done = 0; done < recv_counts[from]; done += kLargestMessage) {
        const uint64_t n = std::min(kLargestMessage, recv_counts[from] - done);
        check(MPI_Irecv(recv.data() + recv_displacements[from] + done, static_cast<int>(n),
                        MPI_BYTE, static_cast<int>(from), 0, comm_, &requests.emplace_back()),
              "MPI_Irecv");
      }
      for (uint64_t done = 0; done < send_counts[to]; done += kLargestMessage) {
        const uint64_t n = std::min(kLargestMessage, send_counts[to] - done);
        check(MPI_Isend(send.data() + send_displacements[to] + done, static_cast<int>(n), MPI_BYTE,
                        static_cast<int>(to), 0, comm_, &requests.emplace_back()),
              "MPI_Isend");
      }
      check(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE),
            "MPI_Waitall");
    }
  }

  void broadcast(std::span<std::byte> bytes, int root) override {
    for (uint64_t done = 0; done < bytes.size(); done += kLargestMessage) {
      const uint64_t n = std::min<uint64_t>(kLargestMessage, bytes.size() - done);
      check(MPI_Bcast(bytes.data() + done, static_cast<int>(n), MPI_BYTE, root, comm_),
            "MPI_Bcast");
    }
  }

  int64_t allreduce_max(int64_t value) override {
    int64_t out = 0;
    check(MPI_Allreduce(&value, &out, 1, MPI_INT64_T, MPI_MAX, comm_), "MPI_Allreduce");
    return out;
  }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator(MPI_Comm comm) {
  return std::make_unique<MpiCommunicator>(comm);
}

}  // namespace ballast
