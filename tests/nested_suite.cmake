# Configures, builds and runs this project's test suite and examples a second time, compiled
# against single_include/lazytensor.hpp instead of include/ (ctest's single_header_suite).
#   cmake -DSOURCE_DIR=... -DWORK_DIR=... -DJOBS=N -DCONFIGURE_ARGS=<;-list> -P single_header_suite.cmake
function(run)
    execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
        string(REPLACE ";" " " cmd "${ARGN}")
        message(FATAL_ERROR "failed (${rc}): ${cmd}")
    endif()
endfunction()
# Release builds here use -O1 rather than the main build's -O2: the point is that the single
# header compiles and behaves as include/ does (a different optimization level has found a bug
# before), and each test program compiles the whole runtime (25 s of CPU at -O1, 48 s at -O2).
run(${CMAKE_COMMAND} -S "${SOURCE_DIR}" -B "${WORK_DIR}" -DLAZYTENSOR_SINGLE_HEADER=ON -DLAZYTENSOR_BUILD_BENCH=OFF
    -DLAZYTENSOR_PACKAGE_TESTS=OFF -DLAZYTENSOR_INSTALL=OFF ${CONFIGURE_ARGS} -DLAZYTENSOR_TEST_OPTIMIZATION=-O1)
run(${CMAKE_COMMAND} --build "${WORK_DIR}" -j ${JOBS})
run(${CMAKE_CTEST_COMMAND} --test-dir "${WORK_DIR}" -j ${JOBS} --output-on-failure --no-tests=error)
