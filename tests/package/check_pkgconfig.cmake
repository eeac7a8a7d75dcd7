# SPDX-License-Identifier: MIT
# Installs the configured lazytensor build to a prefix and builds tests/package/consumer's
# programs without CMake, from `pkg-config --cflags --libs` alone, as a Makefile would: main.cpp
# header-only with lazytensor.pc, and the two separate-runtime units with lazytensor_runtime.pc
# (which requires lazytensor.pc). Run by ctest (tests/CMakeLists.txt):
#   cmake -DSOURCE_DIR=... -DBUILD_DIR=... -DWORK_DIR=... -DCXX=... -DEXPECT=<regex>
#         -P check_pkgconfig.cmake
function(run)
    execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
        string(REPLACE ";" " " cmd "${ARGN}")
        message(FATAL_ERROR "failed (${rc}): ${cmd}\n${out}\n${err}")
    endif()
    set(run_output "${out}" PARENT_SCOPE)
endfunction()

find_program(PKG_CONFIG NAMES pkg-config pkgconf REQUIRED)
file(REMOVE_RECURSE "${WORK_DIR}")
run(${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${WORK_DIR}/prefix")
file(GLOB_RECURSE pc_files "${WORK_DIR}/prefix/*/pkgconfig/lazytensor.pc")
if(NOT pc_files)
    message(FATAL_ERROR "cmake --install did not install lazytensor.pc under ${WORK_DIR}/prefix")
endif()
list(GET pc_files 0 pc_file)
get_filename_component(pc_dir "${pc_file}" DIRECTORY)
if(NOT EXISTS "${pc_dir}/lazytensor_runtime.pc")
    message(FATAL_ERROR "cmake --install did not install lazytensor_runtime.pc beside ${pc_file}")
endif()

# The flags of a package, as `pkg-config --cflags --libs` prints them for this prefix alone.
function(flags_of package out_var)
    run(${CMAKE_COMMAND} -E env "PKG_CONFIG_PATH=${pc_dir}" ${PKG_CONFIG} --cflags --libs ${package})
    string(STRIP "${run_output}" line)
    message("pkg-config --cflags --libs ${package}: ${line}")
    string(FIND "${line}" "-I${WORK_DIR}/prefix/" at)  # this prefix's headers, not the source tree's
    if(at EQUAL -1)
        message(FATAL_ERROR "${package}'s flags do not name the installed include directory: ${line}")
    endif()
    separate_arguments(list UNIX_COMMAND "${line}")
    set(${out_var} ${list} PARENT_SCOPE)
endfunction()

set(consumer "${SOURCE_DIR}/tests/package/consumer")
flags_of(lazytensor header_only_flags)
# -O0: what is tested is the flags, and the header-only engine compiles in two thirds of -O1's time.
run(${CXX} -std=c++17 -O0 "${consumer}/main.cpp" -o "${WORK_DIR}/consumer" ${header_only_flags})
run("${WORK_DIR}/consumer")
message("${run_output}")
if(NOT run_output MATCHES "${EXPECT}")
    message(FATAL_ERROR "the pkg-config consumer's output does not match '${EXPECT}'")
endif()

# The installed runtime is compiled with -march=native (LAZYTENSOR_RUNTIME_NATIVE): so are its units.
flags_of(lazytensor_runtime separate_flags)
run(${CXX} -std=c++17 -O1 -march=native "${consumer}/separate_main.cpp" "${consumer}/separate_part.cpp"
    -o "${WORK_DIR}/consumer_separate" ${separate_flags})
run("${WORK_DIR}/consumer_separate")
message("${run_output}")
if(NOT run_output MATCHES "^separate host: row sums 1 1, matmul .* ok\n" OR run_output MATCHES "WRONG")
    message(FATAL_ERROR "the separate-runtime pkg-config consumer's output is not right")
endif()
