// The agreement on failure across ranks (ballast::agree_on_failure, distributed.hpp).
#include "distributed/collective_status.hpp"

#include <cstring>
#include <string>

#include <fmt/format.h>

#include "ballast/error.hpp"

namespace ballast {
namespace {

struct LocalFailure {
  ErrorCode code = ErrorCode::io;
  std::string text;
};

LocalFailure describe_failure(std::exception_ptr failure) {
  try {
    std::rethrow_exception(failure);
  } catch (const Error& e) {
    return {e.code(), e.what()};
  } catch (const std::exception& e) {
    return {ErrorCode::io, e.what()};
  } catch (...) {
    return {ErrorCode::io, "unknown exception"};
  }
}

// The failing rank's code and text length, then its text, broadcast from `root`.
LocalFailure broadcast_failure(Communicator& comm, const LocalFailure& mine, int root) {
  int64_t header[2] = {static_cast<int64_t>(mine.code), static_cast<int64_t>(mine.text.size())};
  comm.broadcast(std::as_writable_bytes(std::span(header)), root);
  std::string text(static_cast<size_t>(header[1]), '\0');
  if (comm.rank() == root) text = mine.text;
  comm.broadcast(std::as_writable_bytes(std::span(text)), root);
  return {static_cast<ErrorCode>(header[0]), std::move(text)};
}

}  // namespace

void agree_on_failure(Communicator& communicator, std::exception_ptr failure,
                      std::string_view phase) {
  Communicator& comm = communicator.control();  // host memory: the messages below are strings
  const int size = comm.size();
  // The lowest failing rank r reports size - r, the largest value; success reports 0.
  const int64_t highest = comm.allreduce_max(failure ? size - comm.rank() : 0);
  if (highest == 0) return;
  const int root = size - static_cast<int>(highest);
  const LocalFailure mine = failure ? describe_failure(failure) : LocalFailure{};
  const LocalFailure agreed = broadcast_failure(comm, mine, root);
  throw Error(agreed.code, fmt::format("cooperative load ({}) failed on rank {} of {}: {}", phase,
                                       root, size, agreed.text));
}

}  // namespace ballast
