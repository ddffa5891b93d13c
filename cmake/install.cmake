# Installs the library, headers and a CMake package so that consumers can
# find_package(ballast) and link ballast::ballast.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS ballast EXPORT ballastTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY include/ballast DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
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
