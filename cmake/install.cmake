# Installs the library, headers, a CMake package (find_package(ballast), ballast::ballast and,
# built with MPI, ballast::mpi; with NCCL, ballast::nccl) and pkg-config files (ballast;
# ballast-mpi with MPI; ballast-nccl with NCCL).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(BALLAST_INSTALLED_LIBRARIES ballast)
if(TARGET ballast_mpi)
  list(APPEND BALLAST_INSTALLED_LIBRARIES ballast_mpi)
endif()
if(TARGET ballast_nccl)
  list(APPEND BALLAST_INSTALLED_LIBRARIES ballast_nccl)
endif()
install(TARGETS ${BALLAST_INSTALLED_LIBRARIES} EXPORT ballastTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY include/ballast DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_BINARY_DIR}/include/ballast/version.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ballast)
install(EXPORT ballastTargets NAMESPACE ballast:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ballast)
configure_package_config_file(cmake/ballastConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/ballastConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ballast)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/ballastConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/ballastConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/ballastConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ballast)
if(BALLAST_BUILD_TOOLS)
  install(TARGETS ballast_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

# pkg-config: a static library's dependencies are public requirements, a shared library's
# private ones (`pkg-config --static` lists them). The prefix is found from the .pc file's own
# folder, so the file works wherever the tree is installed.
set(BALLAST_PC_REQUIRES_FIELD "Requires")
if(BUILD_SHARED_LIBS)
  set(BALLAST_PC_REQUIRES_FIELD "Requires.private")
endif()
set(BALLAST_PC_REQUIRES "fmt libcrypto zlib libhwy libcurl")
if(URING_FOUND)
  string(APPEND BALLAST_PC_REQUIRES " liburing")
endif()
set(BALLAST_PC_EXTRA_LIBS "")
if(BALLAST_HAVE_CUDA AND NOT BUILD_SHARED_LIBS)
  string(APPEND BALLAST_PC_EXTRA_LIBS " -L${CUDAToolkit_LIBRARY_DIR} -lcudart_static -ldl -lrt")
endif()
if(BALLAST_SANITIZE)
  string(APPEND BALLAST_PC_EXTRA_LIBS " -fsanitize=address,undefined")
endif()
file(RELATIVE_PATH BALLAST_PC_PREFIX_FROM_PCFILEDIR "${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig"
     "${CMAKE_INSTALL_PREFIX}")
configure_file(cmake/ballast.pc.in ${CMAKE_CURRENT_BINARY_DIR}/ballast.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/ballast.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# ballast-mpi.pc: the MPI communicator, its MPI flags as CMake found them.
if(TARGET ballast_mpi)
  list(TRANSFORM MPI_CXX_INCLUDE_DIRS PREPEND "-I" OUTPUT_VARIABLE BALLAST_PC_MPI_CFLAGS)
  list(JOIN BALLAST_PC_MPI_CFLAGS " " BALLAST_PC_MPI_CFLAGS)
  list(JOIN MPI_CXX_LIBRARIES " " BALLAST_PC_MPI_LIBS)
  configure_file(cmake/ballast-mpi.pc.in ${CMAKE_CURRENT_BINARY_DIR}/ballast-mpi.pc @ONLY)
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/ballast-mpi.pc
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endif()

# ballast-nccl.pc: the NCCL communicator; a static one brings NCCL and the CUDA runtime.
if(TARGET ballast_nccl)
  get_filename_component(BALLAST_PC_NCCL_LIBDIR ${NCCL_LIBRARY} DIRECTORY)
  set(BALLAST_PC_NCCL_LIBS "")
  if(NOT BUILD_SHARED_LIBS)
    set(BALLAST_PC_NCCL_LIBS
        "-L${BALLAST_PC_NCCL_LIBDIR} -lnccl -L${CUDAToolkit_LIBRARY_DIR} -lcudart_static -ldl -lrt")
  endif()
  configure_file(cmake/ballast-nccl.pc.in ${CMAKE_CURRENT_BINARY_DIR}/ballast-nccl.pc @ONLY)
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/ballast-nccl.pc
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endif()
