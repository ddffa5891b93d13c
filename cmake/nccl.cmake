# NCCL for cooperative loading's NCCL communicator (ballast_nccl, src/CMakeLists.txt): needs the
# CUDA backend (BALLAST_HAVE_CUDA) and NCCL's header and library, looked for beside the CUDA
# toolkit's (NCCL_ROOT names another prefix). BALLAST_NCCL=AUTO builds it when both are found,
# ON requires them, OFF leaves it out. Sets BALLAST_HAVE_NCCL, NCCL_INCLUDE_DIR, NCCL_LIBRARY.
set(BALLAST_NCCL AUTO CACHE STRING "Build the NCCL communicator: AUTO, ON or OFF")
set_property(CACHE BALLAST_NCCL PROPERTY STRINGS AUTO ON OFF)

set(BALLAST_HAVE_NCCL OFF)
if(NOT BALLAST_NCCL STREQUAL "OFF")
  if(BALLAST_HAVE_CUDA)
    find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${NCCL_ROOT}/include ${CUDAToolkit_INCLUDE_DIRS})
    find_library(NCCL_LIBRARY nccl HINTS ${NCCL_ROOT}/lib ${CUDAToolkit_LIBRARY_DIR})
  endif()
  if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    set(BALLAST_HAVE_NCCL ON)
    message(STATUS "NCCL communicator: on (${NCCL_LIBRARY})")
  elseif(BALLAST_NCCL STREQUAL "ON")
    message(FATAL_ERROR "BALLAST_NCCL=ON but no CUDA backend or no NCCL (nccl.h, libnccl) found")
  else()
    message(STATUS "NCCL communicator: off (needs the CUDA backend and NCCL)")
  endif()
endif()
