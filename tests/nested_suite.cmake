# SPDX-License-Identifier: MIT
# Configures, builds and runs this project's tests a second time in another configuration (ctest's
# asan_ubsan_* and tsan_threads):
#   cmake -DSOURCE_DIR=... -DWORK_DIR=... -DJOBS=N -DCONFIGURE_ARGS=<;-list> [-DTARGETS=<;-list>]
#         [-DENV=<;-list of NAME=value>] [-DRUN=<;-list: a command instead of ctest>] [-DOPTIMIZATION=-O0]
#         [-DSTEP=build|test] [-DTESTS=<regex>] -P nested_suite.cmake
# RUN's first word names a program of the nested build (e.g. tests/test_reliability). STEP=build
# only configures and builds; STEP=test only runs the nested build's tests that match TESTS (ctest
# -R), so that the outer ctest runs them side by side with its other tests.
function(run)
    execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
        string(REPLACE ";" " " cmd "${ARGN}")
        message(FATAL_ERROR "failed (${rc}): ${cmd}")
    endif()
endfunction()
# Release builds here use -O1 (or OPTIMIZATION) rather than the main build's -O2: each test
# program compiles the whole runtime (25 s of CPU at -O1, 48 s at -O2), and sanitizers slow
# compiling further (ASan+UBSan: 55 s at -O0, 147 s at -O1).
if(NOT OPTIMIZATION)
    set(OPTIMIZATION -O1)
endif()
if(NOT STEP STREQUAL "test")
    run(${CMAKE_COMMAND} -S "${SOURCE_DIR}" -B "${WORK_DIR}" -DLAZYTENSOR_BUILD_BENCH=OFF -DLAZYTENSOR_BUILD_EXAMPLES=OFF
        -DLAZYTENSOR_PACKAGE_TESTS=OFF -DLAZYTENSOR_INSTALL=OFF ${CONFIGURE_ARGS} -DLAZYTENSOR_TEST_OPTIMIZATION=${OPTIMIZATION})
    set(targets)
    foreach(t ${TARGETS})
        list(APPEND targets --target ${t})
    endforeach()
    run(${CMAKE_COMMAND} --build "${WORK_DIR}" -j ${JOBS} ${targets})
endif()
if(STEP STREQUAL "build")
    return()
elseif(STEP STREQUAL "test")
    run(${CMAKE_COMMAND} -E env ${ENV} ${CMAKE_CTEST_COMMAND} --test-dir "${WORK_DIR}" -R "${TESTS}" --output-on-failure
        --no-tests=error)
elseif(RUN)
    list(POP_FRONT RUN program)
    run(${CMAKE_COMMAND} -E env ${ENV} "${WORK_DIR}/${program}" ${RUN})
else()
    run(${CMAKE_COMMAND} -E env ${ENV} ${CMAKE_CTEST_COMMAND} --test-dir "${WORK_DIR}" -j ${JOBS} --output-on-failure
        --no-tests=error)
endif()
