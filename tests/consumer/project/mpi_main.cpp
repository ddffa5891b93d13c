// Makes the MPI communicator through the installed ballast::mpi and reports its rank and size
// (run without mpirun: a singleton MPI process, rank 0 of 1).
#include <ballast/mpi_communicator.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  {
    auto comm = ballast::make_mpi_communicator(MPI_COMM_WORLD);
    std::printf("mpi communicator: rank %d of %d\n", comm->rank(), comm->size());
  }
  MPI_Finalize();
  return 0;
}
