# SPDX-License-Identifier: MIT
# Finds what lazytensor needs and attaches it to an INTERFACE target. One macro for both ways the
# library is consumed, so they cannot drift apart: this project's CMakeLists.txt calls it for
# the build tree (add_subdirectory, FetchContent), and the installed lazytensorConfig.cmake
# calls it for find_package. The links are wrapped in $<BUILD_INTERFACE:> so that the exported
# target file carries none of them: the installed config adds them when it is loaded, finding
# each dependency on the consumer's machine.
#
#   lazytensor_add_dependencies(<target> OPENCL <bool> CLBLAST <bool> [LAPACK <bool>])
#
# Sets lazytensor_DEPENDENCY_ERROR to a message naming what is missing (empty when all was found).
macro(lazytensor_add_dependencies _lt_target)
    cmake_parse_arguments(_lt "" "OPENCL;CLBLAST;LAPACK" "" ${ARGN})
    set(lazytensor_DEPENDENCY_ERROR "")
    find_package(Threads QUIET)
    find_package(xsimd QUIET)
    if(NOT Threads_FOUND)
        set(lazytensor_DEPENDENCY_ERROR "lazytensor needs a threads library (pthreads)")
    elseif(NOT xsimd_FOUND)
        set(lazytensor_DEPENDENCY_ERROR "lazytensor needs xsimd (Debian: apt-get install libxsimd-dev xtl-dev)")
    else()
        # Debian's xsimd target names xtl as a link library: without xtl's target that would
        # become a plain -lxtl and fail at link time, so find it whenever xsimd asks for it.
        get_target_property(_lt_xsimd_links xsimd INTERFACE_LINK_LIBRARIES)
        if(_lt_xsimd_links MATCHES "xtl")
            find_package(xtl QUIET)
            if(NOT xtl_FOUND)
                set(lazytensor_DEPENDENCY_ERROR "xsimd links xtl, which was not found (Debian: apt-get install xtl-dev)")
            endif()
        endif()
        target_link_libraries(${_lt_target} INTERFACE $<BUILD_INTERFACE:xsimd> $<BUILD_INTERFACE:Threads::Threads>)
    endif()
    if(_lt_OPENCL AND NOT lazytensor_DEPENDENCY_ERROR)
        find_package(OpenCL QUIET)
        if(NOT OpenCL_FOUND)
            set(lazytensor_DEPENDENCY_ERROR
                "the OpenCL backend needs an OpenCL ICD loader and headers (Debian: apt-get install ocl-icd-opencl-dev opencl-c-headers); for a host-only library use LAZYTENSOR_NO_OPENCL=ON (installed package) or -DLAZYTENSOR_OPENCL=OFF (source tree)")
        else()
            target_link_libraries(${_lt_target} INTERFACE $<BUILD_INTERFACE:OpenCL::OpenCL>)
            target_compile_definitions(${_lt_target} INTERFACE
                $<BUILD_INTERFACE:LAZYTENSOR_OPENCL=1> $<BUILD_INTERFACE:CL_TARGET_OPENCL_VERSION=120>)
        endif()
        if(_lt_CLBLAST AND NOT lazytensor_DEPENDENCY_ERROR)
            find_package(CLBlast QUIET)
            if(NOT CLBlast_FOUND)
                set(lazytensor_DEPENDENCY_ERROR
                    "OpenCL matrix products use CLBlast, which was not found (Debian: apt-get install libclblast-dev); without it use LAZYTENSOR_NO_CLBLAST=ON (installed package) or -DLAZYTENSOR_CLBLAST=OFF (source tree)")
            else()
                target_link_libraries(${_lt_target} INTERFACE $<BUILD_INTERFACE:clblast>)
                target_compile_definitions(${_lt_target} INTERFACE $<BUILD_INTERFACE:LAZYTENSOR_CLBLAST=1>)
            endif()
        endif()
    endif()
    # lt::linalg runs LAPACK through LAPACKE (its header and library; the LAPACK behind it is
    # whichever the system provides, OpenBLAS's where it is installed).
    if(_lt_LAPACK AND NOT lazytensor_DEPENDENCY_ERROR)
        find_path(LAZYTENSOR_LAPACKE_INCLUDE_DIR lapacke.h PATH_SUFFIXES lapacke openblas)
        find_library(LAZYTENSOR_LAPACKE_LIBRARY lapacke)
        if(NOT LAZYTENSOR_LAPACKE_INCLUDE_DIR OR NOT LAZYTENSOR_LAPACKE_LIBRARY)
            set(lazytensor_DEPENDENCY_ERROR
                "lt::linalg uses LAPACK through LAPACKE, which was not found (Debian: apt-get install liblapacke-dev); without it use LAZYTENSOR_NO_LAPACK=ON (installed package) or -DLAZYTENSOR_LAPACK=OFF (source tree)")
        else()
            target_include_directories(${_lt_target} SYSTEM INTERFACE $<BUILD_INTERFACE:${LAZYTENSOR_LAPACKE_INCLUDE_DIR}>)
            target_link_libraries(${_lt_target} INTERFACE $<BUILD_INTERFACE:${LAZYTENSOR_LAPACKE_LIBRARY}>)
            target_compile_definitions(${_lt_target} INTERFACE $<BUILD_INTERFACE:LAZYTENSOR_LAPACK=1>)
        endif()
    endif()
endmacro()

# VkFFT (Debian libvkfft-dev: the header vkFFT.h, MIT) for the unit that compiles the engine:
# the include directory and LAZYTENSOR_VKFFT=1, PRIVATE to <target> (a compiled runtime), so that
# no user unit compiles the header. Sets lazytensor_VKFFT_FOUND.
#
#   lazytensor_add_vkfft(<compiled target>)
macro(lazytensor_add_vkfft _lt_target)
    find_path(LAZYTENSOR_VKFFT_INCLUDE_DIR vkFFT.h PATH_SUFFIXES vkfft VkFFT)
    if(LAZYTENSOR_VKFFT_INCLUDE_DIR)
        set(lazytensor_VKFFT_FOUND ON)
        target_include_directories(${_lt_target} SYSTEM PRIVATE ${LAZYTENSOR_VKFFT_INCLUDE_DIR})
        target_compile_definitions(${_lt_target} PRIVATE LAZYTENSOR_VKFFT=1)
    else()
        set(lazytensor_VKFFT_FOUND OFF)
    endif()
endmacro()

# lazytensor::distributed: lt::dist's MPI transport (lazytensor/dist/mpi.hpp), for the programs
# that link it: MPI's compile and link flags (find_package(MPI): Open MPI or MPICH) and
# LAZYTENSOR_MPI=1. The engine itself holds no MPI. Sets lazytensor_MPI_FOUND.
#
#   lazytensor_add_distributed(<INTERFACE target>)
macro(lazytensor_add_distributed _lt_target)
    set(MPI_CXX_SKIP_MPICXX ON)  # the C API alone (MPI's C++ bindings are deprecated)
    find_package(MPI QUIET COMPONENTS CXX)
    set(lazytensor_MPI_FOUND ${MPI_CXX_FOUND})
    if(MPI_CXX_FOUND)
        target_link_libraries(${_lt_target} INTERFACE MPI::MPI_CXX)
        target_compile_definitions(${_lt_target} INTERFACE LAZYTENSOR_MPI=1)
    endif()
endmacro()
