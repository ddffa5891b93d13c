// A Python object as a ballast::Communicator (ballast/distributed.hpp): any object with the
// methods rank(), size(), allgatherv_in_place(buffer, counts, displacements),
// broadcast(buffer, root) and allreduce_max(value), and optionally alltoallv(send, send_counts,
// send_displacements, recv, recv_counts, recv_displacements) (ballast.distributed's adapters for
// mpi4py and others; without it, ranks that keep shards receive whole tensors). Each call takes the
// GIL, and only the thread that made the communicator may call it: collectives must run in one
// order on each rank.
#pragma once

#include <memory>

#include <nanobind/nanobind.h>

#include "ballast/distributed.hpp"

namespace ballast::python {

std::unique_ptr<Communicator> make_python_communicator(nanobind::handle object);

}  // namespace ballast::python
