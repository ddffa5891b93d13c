// GPUDirect Storage through NVIDIA's cuFile: the direct path (direct_storage.hpp) of the CUDA
// backend. libcufile is loaded at run time and its driver opened once per process; each file's
// O_DIRECT descriptor is registered once; cuFileRead moves file bytes into device memory by
// DMA from the storage (through nvidia-fs), or, in cuFile's compatibility mode (no nvidia-fs),
// through cuFile's own buffers. Built only when CMake finds cufile.h (BALLAST_CUFILE,
// cmake/cuda.cmake); without it (cuda/no_cufile.cpp) there is never a direct path.
#pragma once

#include <string>

#include "ballast/config.hpp"
#include "cuda/direct_storage.hpp"

namespace ballast {

// The direct path to CUDA device `index` under `mode` (automatic or required), shared by every
// loader of the process, or null with `reason` set: no cufile.h at build time, no libcufile
// at run time, its driver failing to open, or, under automatic, only its compatibility mode.
DirectStorage* cufile_direct_storage(int index, GpuDirectStorage mode, std::string& reason);

}  // namespace ballast
