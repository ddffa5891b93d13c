// BatchReader (see batch_reader.hpp). Each thread owns one lazily created ring; a thread whose
// ring cannot be created (no liburing in the build, io_uring disabled by the kernel or a
// container's seccomp policy) reads with pread instead.
#include "io/batch_reader.hpp"

#include <cerrno>
#include <memory>

#include "ballast/error.hpp"
#include "io/os.hpp"

#if BALLAST_HAVE_LIBURING
#include <liburing.h>
#endif

namespace ballast {

#if BALLAST_HAVE_LIBURING
struct UringRing {
  io_uring ring{};
  bool ok = false;
  UringRing() { ok = io_uring_queue_init(BatchReader::kMaxDepth, &ring, 0) == 0; }
  ~UringRing() {
    if (ok) io_uring_queue_exit(&ring);
  }
  UringRing(const UringRing&) = delete;
  UringRing& operator=(const UringRing&) = delete;
};

namespace {
UringRing* thread_ring() {
  thread_local std::unique_ptr<UringRing> ring = std::make_unique<UringRing>();
  return ring->ok ? ring.get() : nullptr;
}
}  // namespace
#else
struct UringRing {};
namespace {
UringRing* thread_ring() { return nullptr; }
}  // namespace
#endif

bool io_uring_available() { return thread_ring() != nullptr; }

BatchReader::BatchReader(const Os& os, bool use_uring)
    : os_(os), ring_(use_uring && os.allows_io_uring() ? thread_ring() : nullptr) {}

BatchReader::~BatchReader() {
  // Never leave the kernel writing into buffers the caller is about to free (after an error,
  // reads may still be in flight).
  try {
    while (in_flight_ > 0) wait();
  } catch (const Error&) {
    // The ring itself failed; nothing more can be collected.
  }
}

void BatchReader::submit(uint64_t tag, int fd, void* buffer, size_t length, uint64_t offset) {
  if (in_flight_ >= kMaxDepth)
    throw Error(ErrorCode::invalid_argument, "BatchReader: more reads in flight than its depth");
#if BALLAST_HAVE_LIBURING
  if (ring_ != nullptr) {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_->ring);
    if (sqe == nullptr) throw Error(ErrorCode::io, "io_uring submission queue is full");
    io_uring_prep_read(sqe, fd, buffer, static_cast<unsigned>(length), offset);
    io_uring_sqe_set_data64(sqe, tag);
    int rc = io_uring_submit(&ring_->ring);
    if (rc < 0) throw Error(ErrorCode::io, "io_uring_submit failed");
    ++in_flight_;
    return;
  }
#endif
  ssize_t n;
  do {
    n = os_.pread(fd, buffer, length, static_cast<off_t>(offset));
  } while (n < 0 && errno == EINTR);
  finished_.push_back({tag, n < 0 ? -errno : n});
  ++in_flight_;
}

BatchReader::Done BatchReader::wait() {
  if (in_flight_ == 0) throw Error(ErrorCode::invalid_argument, "BatchReader: nothing to wait for");
#if BALLAST_HAVE_LIBURING
  if (ring_ != nullptr) {
    io_uring_cqe* cqe = nullptr;
    int rc;
    do {
      rc = io_uring_wait_cqe(&ring_->ring, &cqe);
    } while (rc == -EINTR);
    if (rc < 0) throw Error(ErrorCode::io, "io_uring_wait_cqe failed");
    Done done{io_uring_cqe_get_data64(cqe), cqe->res};
    io_uring_cqe_seen(&ring_->ring, cqe);
    --in_flight_;
    return done;
  }
#endif
  Done done = finished_.front();
  finished_.pop_front();
  --in_flight_;
  return done;
}

}  // namespace ballast
