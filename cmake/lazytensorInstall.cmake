# SPDX-License-Identifier: MIT
# Install rules: the headers, the exported targets (the header-only library and the compiled
# runtime) and a package config with a version file, so
# that `cmake --install` to a prefix followed by find_package(lazytensor CONFIG) works.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(LAZYTENSOR_INSTALL_CMAKEDIR "${CMAKE_INSTALL_DATADIR}/cmake/lazytensor"
    CACHE STRING "Where the CMake package files go, relative to the prefix")

install(DIRECTORY include/ DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}" FILES_MATCHING PATTERN "*.hpp")
install(TARGETS lazytensor lazytensor_runtime EXPORT lazytensorTargets
        ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}")
install(FILES LICENSE DESTINATION "${CMAKE_INSTALL_DATADIR}/licenses/lazytensor")
install(EXPORT lazytensorTargets NAMESPACE lazytensor:: DESTINATION "${LAZYTENSOR_INSTALL_CMAKEDIR}")

configure_package_config_file(cmake/lazytensorConfig.cmake.in
    "${CMAKE_CURRENT_BINARY_DIR}/lazytensorConfig.cmake"
    INSTALL_DESTINATION "${LAZYTENSOR_INSTALL_CMAKEDIR}")
# 0.x releases may break the API with each minor version, so only the same major.minor matches;
# the compiled runtime (lazytensor::runtime) ties the package to its architecture.
write_basic_package_version_file("${CMAKE_CURRENT_BINARY_DIR}/lazytensorConfigVersion.cmake"
    COMPATIBILITY SameMinorVersion)
install(FILES "${CMAKE_CURRENT_BINARY_DIR}/lazytensorConfig.cmake"
              "${CMAKE_CURRENT_BINARY_DIR}/lazytensorConfigVersion.cmake"
              cmake/lazytensorDependencies.cmake
        DESTINATION "${LAZYTENSOR_INSTALL_CMAKEDIR}")
