# SPDX-License-Identifier: MIT
# Every header under include/ compiles on its own, in a translation unit that includes nothing
# else (so no header depends on what was included before it), and the umbrella header compiles
# in each mode. The front end's and interop's headers compile as a LAZYTENSOR_SEPARATE_RUNTIME
# unit would see them: header-only, each would compile the whole engine again through
# lazytensor.hpp's last include (4.7 s against 1.5 s each; the check took 195 s, now 113); only
# that header pulls in the engine, checked in every mode, and the engine's headers alone.
# The interop headers need their libraries' include directories (EIGEN_INCLUDE, DLPACK_INCLUDE);
# without one, its header is left out. Run by ctest:
# cmake -DSOURCE_DIR=... -DWORK_DIR=... -DCXX=... [-DEIGEN_INCLUDE=...] [-DDLPACK_INCLUDE=...] -P check_headers.cmake
file(GLOB_RECURSE headers RELATIVE "${SOURCE_DIR}/include" "${SOURCE_DIR}/include/*.hpp")
list(SORT headers)
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
set(flags -std=c++17 -fsyntax-only -Wall -Wextra -Werror -I${SOURCE_DIR}/include)
if(OPENCL)  # the OpenCL backend's headers need OpenCL's and CLBlast's
    list(APPEND flags -DCL_TARGET_OPENCL_VERSION=120 -DLAZYTENSOR_OPENCL=1 -DLAZYTENSOR_CLBLAST=1)
endif()
set(failures "")
set(count 0)
function(check header)
    string(MAKE_C_IDENTIFIER "${header}${ARGN}" name)
    set(unit "${WORK_DIR}/${name}.cpp")
    file(WRITE "${unit}" "#include <${header}>\n")
    execute_process(COMMAND ${CXX} ${flags} ${ARGN} "${unit}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
        set(failures "${failures}\n--- ${header} ${ARGN}:\n${out}${err}" PARENT_SCOPE)
    endif()
endfunction()
set(skipped "")
foreach(header IN LISTS headers)
    if(header STREQUAL "lazytensor/interop/eigen.hpp")
        if(NOT EIGEN_INCLUDE)
            list(APPEND skipped ${header})
            continue()
        endif()
        check(${header} -isystem ${EIGEN_INCLUDE} -DLAZYTENSOR_SEPARATE_RUNTIME)
    elseif(header STREQUAL "lazytensor/interop/dlpack.hpp")
        if(NOT DLPACK_INCLUDE)
            list(APPEND skipped ${header})
            continue()
        endif()
        check(${header} -I${DLPACK_INCLUDE} -DLAZYTENSOR_SEPARATE_RUNTIME)  # (-isystem /usr/include would reorder the system directories)
    elseif(header MATCHES "_definitions[.]hpp$")  # the engine's side of a front-end header: as the implementation unit sees it
        check(${header} -DLAZYTENSOR_IMPLEMENTATION)
    elseif(header MATCHES "^lazytensor/frontend/")
        check(${header} -DLAZYTENSOR_SEPARATE_RUNTIME)
    else()
        check(${header})
    endif()
    math(EXPR count "${count} + 1")
endforeach()
check(lazytensor.hpp)
check(lazytensor.hpp -DLAZYTENSOR_SEPARATE_RUNTIME)
check(lazytensor.hpp -DLAZYTENSOR_IMPLEMENTATION)
check(lazytensor.hpp -DLAZYTENSOR_NO_OPENCL)
if(failures)
    message(FATAL_ERROR "headers that do not compile on their own:${failures}")
endif()
message("${count} headers compile on their own; lazytensor.hpp compiles separate-runtime, as the implementation unit and host-only")
if(skipped)
    message("left out (their library was not found): ${skipped}")
endif()
