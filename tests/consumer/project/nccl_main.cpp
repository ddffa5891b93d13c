// Starts the NCCL communicator through the installed ballast::nccl over a singleton MPI process
// (rank 0 of 1) and reports it: on a machine with a GPU its rank and device, without one the
// `unsupported` error that says so.
#include <ballast/cuda.hpp>
#include <ballast/error.hpp>
#include <ballast/mpi_communicator.hpp>
#include <ballast/nccl_communicator.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int code = 0;
  {
    auto host = ballast::make_mpi_communicator(MPI_COMM_WORLD);
    try {
      auto nccl = ballast::make_nccl_communicator(*host, 0);
      std::printf("nccl communicator: rank %d of %d on %s\n", nccl->rank(), nccl->size(),
                  ballast::to_string(nccl->memory_device()).c_str());
    } catch (const ballast::Error& e) {
      const bool no_gpu =
          e.code() == ballast::ErrorCode::unsupported && ballast::cuda_device_count() == 0;
      std::printf("nccl communicator: %s\n", e.what());
      code = no_gpu ? 0 : 1;
    }
  }
  MPI_Finalize();
  return code;
}
