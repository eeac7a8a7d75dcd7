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
run(${CMAKE_COMMAND} -S "${SOURCE_DIR}" -B "${WORK_DIR}" -DLAZYTENSOR_SINGLE_HEADER=ON -DLAZYTENSOR_BUILD_BENCH=OFF
    -DLAZYTENSOR_PACKAGE_TESTS=OFF -DLAZYTENSOR_INSTALL=OFF ${CONFIGURE_ARGS})
run(${CMAKE_COMMAND} --build "${WORK_DIR}" -j ${JOBS})
run(${CMAKE_CTEST_COMMAND} --test-dir "${WORK_DIR}" -j ${JOBS} --output-on-failure)
