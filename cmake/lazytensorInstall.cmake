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

# pkg-config files for builds without CMake: lazytensor.pc (header-only) and
# lazytensor_runtime.pc (the compiled engine). They name the backends this package is installed
# with: the macros that switch them on, and the pkg-config modules of their libraries (Debian's
# -dev packages ship xsimd.pc, OpenCL.pc, clblast.pc and lapacke.pc). lt::dist over MPI is not
# in them: build such programs with mpicxx and -DLAZYTENSOR_MPI=1. The prefix is written relative
# to the .pc file, so `cmake --install --prefix` anywhere gives a working file.
set(LAZYTENSOR_INSTALL_PKGCONFIGDIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig"
    CACHE STRING "Where the pkg-config files go, relative to the prefix")
file(RELATIVE_PATH _lt_pc_to_prefix "/${LAZYTENSOR_INSTALL_PKGCONFIGDIR}" "/")
string(REGEX REPLACE "/$" "" _lt_pc_to_prefix "${_lt_pc_to_prefix}")
set(_lt_pc_requires "xsimd")
set(_lt_pc_definitions "")
if(LAZYTENSOR_OPENCL)
    string(APPEND _lt_pc_requires ", OpenCL")
    string(APPEND _lt_pc_definitions " -DLAZYTENSOR_OPENCL=1 -DCL_TARGET_OPENCL_VERSION=120")
    if(LAZYTENSOR_CLBLAST)
        string(APPEND _lt_pc_requires ", clblast")
        string(APPEND _lt_pc_definitions " -DLAZYTENSOR_CLBLAST=1")
    endif()
endif()
if(LAZYTENSOR_LAPACK)
    string(APPEND _lt_pc_requires ", lapacke")
    string(APPEND _lt_pc_definitions " -DLAZYTENSOR_LAPACK=1")
endif()
string(STRIP "${_lt_pc_definitions}" _lt_pc_definitions)
configure_file(cmake/lazytensor.pc.in "${CMAKE_CURRENT_BINARY_DIR}/lazytensor.pc" @ONLY)
configure_file(cmake/lazytensor_runtime.pc.in "${CMAKE_CURRENT_BINARY_DIR}/lazytensor_runtime.pc" @ONLY)
install(FILES "${CMAKE_CURRENT_BINARY_DIR}/lazytensor.pc" "${CMAKE_CURRENT_BINARY_DIR}/lazytensor_runtime.pc"
        DESTINATION "${LAZYTENSOR_INSTALL_PKGCONFIGDIR}")
