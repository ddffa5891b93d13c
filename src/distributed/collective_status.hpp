// Steps of a cooperative load run on every rank and followed by the agreement on failure
// (ballast::agree_on_failure): when any rank failed, every rank throws the same Error.
#pragma once

#include <exception>
#include <string_view>

#include "ballast/distributed.hpp"

namespace ballast::distributed {

// Runs `step` on this rank, then agrees with every rank on whether all succeeded.
template <typename Step>
void run_collectively(Communicator& communicator, std::string_view phase, Step&& step) {
  std::exception_ptr failure;
  try {
    step();
  } catch (...) {
    failure = std::current_exception();
  }
  agree_on_failure(communicator, failure, phase);
}

}  // namespace ballast::distributed
