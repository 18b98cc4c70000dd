# `cmake --install` puts the libraries, public headers, the commands and an exported CMake package
# (find_package(gputrain) -> gputrain::core) under CMAKE_INSTALL_PREFIX.
include(CMakePackageConfigHelpers)

install(TARGETS gputrain_base gputrain_core EXPORT gputrainTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/gputrain
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT gputrainTargets NAMESPACE gputrain::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/gputrain)

# The real folder of the LibTorch package, not a path through the clone's .venv link.
get_filename_component(GPUTRAIN_TORCH_DIR_REAL "${Torch_DIR}" REALPATH)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/gputrainConfig.cmake.in
  ${PROJECT_BINARY_DIR}/gputrainConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/gputrain)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/gputrainConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/gputrainConfig.cmake ${PROJECT_BINARY_DIR}/gputrainConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/gputrain)
