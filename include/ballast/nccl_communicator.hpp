// The NCCL Communicator of cooperative loading (ballast/distributed.hpp), in the library
// ballast::nccl (libballast_nccl; built when CUDA and NCCL are found, CMake option BALLAST_NCCL;
// it defines BALLAST_HAVE_NCCL). Its exchanges work on CUDA device memory of one device per
// rank (memory_device() is cuda(n)), so a cooperative load over it lands in device memory.
#pragma once

#include <memory>

#include "ballast/distributed.hpp"

namespace ballast {

// An NCCL communicator over the ranks of `host` (an MPI communicator, say), each rank on its
// CUDA device `device`: rank 0 makes the NCCL unique id, `host` broadcasts it, and every rank
// joins with ncclCommInitRank. Collective over `host`, which must outlive the result (it carries
// the agreement on failure, control()). Throws Error(unsupported) on every rank when a rank has
// no such device, Error(network) naming the device and NCCL's message when NCCL fails.
std::unique_ptr<Communicator> make_nccl_communicator(Communicator& host, int device);

}  // namespace ballast
