// The MPI Communicator of cooperative loading (ballast/distributed.hpp), in the library
// ballast::mpi (libballast_mpi; built when an MPI library is found, CMake option BALLAST_MPI;
// it defines BALLAST_HAVE_MPI); the caller initializes and finalizes MPI and keeps the
// communicator only while MPI is initialized.
#pragma once

#include <memory>

// MPI's C API only: the deprecated C++ bindings (removed in MPI-3) stay out.
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include "ballast/distributed.hpp"

namespace ballast {

// A communicator over a duplicate of `comm` (so ballast's collectives never match the
// caller's messages); collective, as MPI_Comm_dup is.
std::unique_ptr<Communicator> make_mpi_communicator(MPI_Comm comm);

}  // namespace ballast
