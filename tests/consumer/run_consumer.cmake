# Script mode: install the built ballast, then build and run a consumer project against it.
# With -DSHARED=ON, first builds the library from BALLAST_SOURCE_DIR as a shared library (no
# tools, tests or benchmarks), and checks that both consumers run against libballast.so.
file(REMOVE_RECURSE ${WORK_DIR})
if(SHARED)
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${BALLAST_SOURCE_DIR} -B ${BALLAST_BUILD_DIR}
                          -G ${GENERATOR} -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=${CXX}
                          -DBUILD_SHARED_LIBS=ON -DBALLAST_BUILD_TOOLS=OFF
                          -DBALLAST_BUILD_TESTS=OFF -DBALLAST_BUILD_BENCHMARKS=OFF
                  RESULT_VARIABLE rc)
  if(rc)
    message(FATAL_ERROR "configuring the shared library failed: ${rc}")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} --build ${BALLAST_BUILD_DIR} RESULT_VARIABLE rc)
  if(rc)
    message(FATAL_ERROR "building the shared library failed: ${rc}")
  endif()
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BALLAST_BUILD_DIR} --prefix ${WORK_DIR}/prefix
                RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "cmake --install failed: ${rc}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -S ${CONSUMER_SOURCE_DIR} -B ${WORK_DIR}/build -G ${GENERATOR}
                        -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "configuring the consumer failed: ${rc}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}/build RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "building the consumer failed: ${rc}")
endif()
execute_process(COMMAND ${WORK_DIR}/build/consumer RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(rc OR NOT out MATCHES "ballast [0-9]+\\.[0-9]+\\.[0-9]+ .* loaded w: f32 \\[2\\]")
  message(FATAL_ERROR "the consumer failed (${rc}): ${out}")
endif()
message(STATUS "consumer ran: ${out}")
# ballast::ballast alone links no MPI library; ballast::mpi, when installed, works.
execute_process(COMMAND ldd ${WORK_DIR}/build/consumer OUTPUT_VARIABLE linked)
if(linked MATCHES "libmpi")
  message(FATAL_ERROR "the consumer of ballast::ballast is linked to MPI:\n${linked}")
endif()
if(EXISTS ${WORK_DIR}/build/mpi_consumer)
  execute_process(COMMAND ${WORK_DIR}/build/mpi_consumer RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  if(rc OR NOT out MATCHES "mpi communicator: rank 0 of 1")
    message(FATAL_ERROR "the ballast::mpi consumer failed (${rc}): ${out}${err}")
  endif()
  message(STATUS "ballast::mpi consumer ran: ${out}")
endif()
# ballast::ballast alone links no NCCL; ballast::nccl, when installed, starts (or, without a
# GPU, says why not).
if(linked MATCHES "libnccl")
  message(FATAL_ERROR "the consumer of ballast::ballast is linked to NCCL:\n${linked}")
endif()
if(EXISTS ${WORK_DIR}/build/nccl_consumer)
  execute_process(COMMAND ${WORK_DIR}/build/nccl_consumer RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  if(rc OR NOT out MATCHES "nccl communicator: ")
    message(FATAL_ERROR "the ballast::nccl consumer failed (${rc}): ${out}${err}")
  endif()
  message(STATUS "ballast::nccl consumer ran: ${out}")
endif()
if(SHARED)
  execute_process(COMMAND ldd ${WORK_DIR}/build/consumer OUTPUT_VARIABLE linked)
  if(NOT linked MATCHES "libballast\\.so")
    message(FATAL_ERROR "the consumer is not linked to libballast.so:\n${linked}")
  endif()
endif()

# The same program built by the compiler with pkg-config's flags only.
execute_process(COMMAND ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${WORK_DIR}/prefix/lib/pkgconfig
                        pkg-config --cflags --libs ballast
                RESULT_VARIABLE rc OUTPUT_VARIABLE flags ERROR_VARIABLE err
                OUTPUT_STRIP_TRAILING_WHITESPACE)
if(rc)
  message(FATAL_ERROR "pkg-config --cflags --libs ballast failed: ${err}")
endif()
separate_arguments(flags UNIX_COMMAND "${flags}")
execute_process(COMMAND ${CXX} ${CONSUMER_SOURCE_DIR}/main.cpp -o ${WORK_DIR}/pc_consumer ${flags}
                RESULT_VARIABLE rc ERROR_VARIABLE err)
if(rc)
  message(FATAL_ERROR "building with pkg-config's flags failed: ${err}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${WORK_DIR}/prefix/lib
                        ${WORK_DIR}/pc_consumer RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(rc OR NOT out MATCHES "loaded w: f32 \\[2\\]")
  message(FATAL_ERROR "the pkg-config consumer failed (${rc}): ${out}")
endif()
message(STATUS "pkg-config consumer ran: ${out}")

# With MPI, the ballast::mpi program built with `pkg-config --cflags --libs ballast-mpi` alone.
if(EXISTS ${WORK_DIR}/prefix/lib/pkgconfig/ballast-mpi.pc)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${WORK_DIR}/prefix/lib/pkgconfig
                          pkg-config --cflags --libs ballast-mpi
                  RESULT_VARIABLE rc OUTPUT_VARIABLE flags ERROR_VARIABLE err
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(rc)
    message(FATAL_ERROR "pkg-config --cflags --libs ballast-mpi failed: ${err}")
  endif()
  separate_arguments(flags UNIX_COMMAND "${flags}")
  execute_process(COMMAND ${CXX} ${CONSUMER_SOURCE_DIR}/mpi_main.cpp -o ${WORK_DIR}/pc_mpi_consumer
                          ${flags} RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(rc)
    message(FATAL_ERROR "building with ballast-mpi's pkg-config flags failed: ${err}")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${WORK_DIR}/prefix/lib
                          ${WORK_DIR}/pc_mpi_consumer RESULT_VARIABLE rc OUTPUT_VARIABLE out
                          ERROR_VARIABLE err)
  if(rc OR NOT out MATCHES "mpi communicator: rank 0 of 1")
    message(FATAL_ERROR "the pkg-config ballast-mpi consumer failed (${rc}): ${out}${err}")
  endif()
  message(STATUS "pkg-config ballast-mpi consumer ran: ${out}")
endif()

# With NCCL, the ballast::nccl program built with `pkg-config --cflags --libs ballast-nccl
# ballast-mpi` alone.
if(EXISTS ${WORK_DIR}/prefix/lib/pkgconfig/ballast-nccl.pc)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${WORK_DIR}/prefix/lib/pkgconfig
                          pkg-config --cflags --libs ballast-nccl ballast-mpi
                  RESULT_VARIABLE rc OUTPUT_VARIABLE flags ERROR_VARIABLE err
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(rc)
    message(FATAL_ERROR "pkg-config --cflags --libs ballast-nccl failed: ${err}")
  endif()
  separate_arguments(flags UNIX_COMMAND "${flags}")
  execute_process(COMMAND ${CXX} ${CONSUMER_SOURCE_DIR}/nccl_main.cpp
                          -o ${WORK_DIR}/pc_nccl_consumer ${flags}
                  RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(rc)
    message(FATAL_ERROR "building with ballast-nccl's pkg-config flags failed: ${err}")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${WORK_DIR}/prefix/lib
                          ${WORK_DIR}/pc_nccl_consumer RESULT_VARIABLE rc OUTPUT_VARIABLE out
                          ERROR_VARIABLE err)
  if(rc OR NOT out MATCHES "nccl communicator: ")
    message(FATAL_ERROR "the pkg-config ballast-nccl consumer failed (${rc}): ${out}${err}")
  endif()
  message(STATUS "pkg-config ballast-nccl consumer ran: ${out}")
endif()
