# The optional CUDA backend (src/cuda/). BALLAST_CUDA=AUTO builds it when the CUDA toolkit is
# found, ON requires it, OFF leaves it out. The backend is host C++ against the CUDA runtime,
# linked statically (CUDA::cudart_static), so the same binaries run on machines without a GPU
# or driver: a cuda(n) load there fails with a clear not_found. Device kernels (src/cuda/kernels,
# .cu files) are compiled by nvcc only when the CUDA language is available.
set(BALLAST_CUDA AUTO CACHE STRING "Build the CUDA backend: AUTO, ON or OFF")
set_property(CACHE BALLAST_CUDA PROPERTY STRINGS AUTO ON OFF)

set(BALLAST_HAVE_CUDA OFF)
if(NOT BALLAST_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  find_package(CUDAToolkit QUIET)
  if(CMAKE_CUDA_COMPILER AND CUDAToolkit_FOUND)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)
    endif()
    # nvcc compiles .cu files with GCC also when the C++ compiler is clang (the asan preset).
    if(NOT DEFINED CMAKE_CUDA_HOST_COMPILER AND NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
      find_program(BALLAST_GXX g++ REQUIRED)
      set(CMAKE_CUDA_HOST_COMPILER ${BALLAST_GXX})
    endif()
    enable_language(CUDA)
    set(BALLAST_HAVE_CUDA ON)
    message(STATUS "CUDA backend: on (CUDA ${CUDAToolkit_VERSION}, architectures "
                   "${CMAKE_CUDA_ARCHITECTURES})")
  elseif(BALLAST_CUDA STREQUAL "ON")
    message(FATAL_ERROR "BALLAST_CUDA=ON but no CUDA toolkit (nvcc) was found")
  else()
    message(STATUS "CUDA backend: off (no CUDA toolkit found)")
  endif()
endif()

# GPUDirect Storage (src/cuda/cufile_reader.cpp) compiles against cufile.h: the CUDA toolkit's,
# or that of PyPI's nvidia-cufile wheel, which scripts/setup.sh installs into .venv (the CUDA 13
# toolkit here has none). libcufile itself is opened at run time (dlopen), so binaries run where
# it is missing. BALLAST_CUFILE=AUTO builds the cuFile path when the CUDA backend is built and
# the header is found, ON requires it, OFF leaves it out; BALLAST_CUFILE_INCLUDE_DIR names the
# header's folder by hand.
set(BALLAST_CUFILE AUTO CACHE STRING "Build GPUDirect Storage (cuFile): AUTO, ON or OFF")
set_property(CACHE BALLAST_CUFILE PROPERTY STRINGS AUTO ON OFF)

set(BALLAST_HAVE_CUFILE OFF)
if(BALLAST_HAVE_CUDA AND NOT BALLAST_CUFILE STREQUAL "OFF")
  set(cufile_hints ${CUDAToolkit_INCLUDE_DIRS})
  foreach(venv ${PROJECT_SOURCE_DIR}/.venv $ENV{VIRTUAL_ENV})
    file(GLOB wheel_include_dirs ${venv}/lib/python3*/site-packages/nvidia/*/include)
    list(APPEND cufile_hints ${wheel_include_dirs})
  endforeach()
  find_path(BALLAST_CUFILE_INCLUDE_DIR cufile.h HINTS ${cufile_hints})
  if(BALLAST_CUFILE_INCLUDE_DIR)
    set(BALLAST_HAVE_CUFILE ON)
    message(STATUS "GPUDirect Storage: on (cufile.h in ${BALLAST_CUFILE_INCLUDE_DIR})")
  elseif(BALLAST_CUFILE STREQUAL "ON")
    message(FATAL_ERROR "BALLAST_CUFILE=ON but no cufile.h was found: run scripts/setup.sh "
                        "(nvidia-cufile into .venv) or set BALLAST_CUFILE_INCLUDE_DIR")
  else()
    message(STATUS "GPUDirect Storage: off (no cufile.h found)")
  endif()
elseif(BALLAST_CUFILE STREQUAL "ON")
  message(FATAL_ERROR "BALLAST_CUFILE=ON needs the CUDA backend (BALLAST_CUDA)")
endif()
