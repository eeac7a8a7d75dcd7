# SPDX-License-Identifier: MIT
# Builds and runs tests/package/consumer against this source tree, the way a user's project
# would consume it, and checks what it prints. Run by ctest (tests/CMakeLists.txt):
#   cmake -DMODE=find_package|add_subdirectory|fetchcontent -DSOURCE_DIR=... -DBUILD_DIR=...
#         -DWORK_DIR=... -DCXX=... -DEXPECT=<regex> [-DEXTRA=<cache args, ;-separated>]
#         [-DEXPECT_CONFIGURE_ERROR=<regex>] -P check_consumer.cmake
# find_package first installs BUILD_DIR (the configured lazytensor build) to WORK_DIR/prefix.
function(run)
    execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
        string(REPLACE ";" " " cmd "${ARGN}")
        message(FATAL_ERROR "failed (${rc}): ${cmd}\n${out}\n${err}")
    endif()
    set(run_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE "${WORK_DIR}")
set(args -DLAZYTENSOR_CONSUME=${MODE} -DCMAKE_CXX_COMPILER=${CXX} ${EXTRA})
if(MODE STREQUAL "find_package")
    run(${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${WORK_DIR}/prefix")
    # What a user's prefix holds: headers, the package config and its version file.
    foreach(f include/lazytensor.hpp include/lazytensor/core/version.hpp lib/liblazytensor_runtime.a
              share/cmake/lazytensor/lazytensorConfig.cmake share/cmake/lazytensor/lazytensorConfigVersion.cmake)
        if(NOT EXISTS "${WORK_DIR}/prefix/${f}")
            message(FATAL_ERROR "cmake --install did not install ${f}")
        endif()
    endforeach()
    list(APPEND args "-DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix")
else()
    list(APPEND args "-DLAZYTENSOR_SOURCE_DIR=${SOURCE_DIR}")
endif()
if(DEFINED EXPECT_CONFIGURE_ERROR)  # a consumer whose configure must fail, saying why
    execute_process(COMMAND ${CMAKE_COMMAND} -S "${SOURCE_DIR}/tests/package/consumer" -B "${WORK_DIR}/build" ${args}
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
    message("${out}")
    if(rc EQUAL 0 OR NOT out MATCHES "${EXPECT_CONFIGURE_ERROR}")
        message(FATAL_ERROR "configuring the consumer should have failed with '${EXPECT_CONFIGURE_ERROR}'")
    endif()
    return()
endif()
run(${CMAKE_COMMAND} -S "${SOURCE_DIR}/tests/package/consumer" -B "${WORK_DIR}/build" ${args})
message("${run_output}")
run(${CMAKE_COMMAND} --build "${WORK_DIR}/build")
run("${WORK_DIR}/build/consumer")
message("${run_output}")
if(NOT run_output MATCHES "${EXPECT}")
    message(FATAL_ERROR "the consumer's output does not match '${EXPECT}'")
endif()
run("${WORK_DIR}/build/consumer_separate")
message("${run_output}")
if(NOT run_output MATCHES "^separate host: row sums 1 1, matmul .* ok\n" OR run_output MATCHES "WRONG")
    message(FATAL_ERROR "the separate-runtime consumer's output is not right")
endif()
