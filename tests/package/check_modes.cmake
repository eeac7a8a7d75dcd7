# SPDX-License-Identifier: MIT
# The separate-runtime mode on a plain compile line with the single header (no CMake in the
# consumer), and the link errors that name a mode mistake. Run by ctest (tests/CMakeLists.txt):
#   cmake -DSOURCE_DIR=... -DWORK_DIR=... -DCXX=... -P check_modes.cmake
# Host-only (no OpenCL defines), at -O0: this checks the modes, not speed.
function(compile out)
    execute_process(COMMAND ${CXX} -std=c++17 -O0 -pthread -I${SOURCE_DIR}/single_include ${ARGN} -c -o ${out}
                    RESULT_VARIABLE rc OUTPUT_VARIABLE o ERROR_VARIABLE e)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "compiling ${out} failed:\n${o}\n${e}")
    endif()
endfunction()
# Links `objects` into WORK_DIR/program; sets link_rc and link_output.
function(link_program)
    execute_process(COMMAND ${CXX} -pthread ${ARGN} -o ${WORK_DIR}/program
                    RESULT_VARIABLE rc OUTPUT_VARIABLE o ERROR_VARIABLE e)
    set(link_rc ${rc} PARENT_SCOPE)
    set(link_output "${o}${e}" PARENT_SCOPE)
endfunction()

set(src ${SOURCE_DIR}/tests/package/consumer)
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
compile(${WORK_DIR}/main.o -DLAZYTENSOR_SEPARATE_RUNTIME ${src}/separate_main.cpp)
compile(${WORK_DIR}/part.o -DLAZYTENSOR_SEPARATE_RUNTIME ${src}/separate_part.cpp)
compile(${WORK_DIR}/impl.o ${src}/separate_impl.cpp)
compile(${WORK_DIR}/header_only.o ${src}/header_only_part.cpp)

# Two separate-runtime units and the implementation unit: links and runs.
link_program(${WORK_DIR}/main.o ${WORK_DIR}/part.o ${WORK_DIR}/impl.o)
if(NOT link_rc EQUAL 0)
    message(FATAL_ERROR "two separate-runtime units and one implementation unit did not link:\n${link_output}")
endif()
execute_process(COMMAND ${WORK_DIR}/program RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0 OR NOT out MATCHES "^separate host: row sums 1 1, matmul .* ok\n$")
    message(FATAL_ERROR "the separate-runtime program did not print the right values")
endif()

# Each mistake fails to link, naming what to do.
set(mistakes
    "no implementation unit|main.o,part.o|lazytensor_ERROR_LAZYTENSOR_SEPARATE_RUNTIME_needs_one_unit_with_LAZYTENSOR_IMPLEMENTATION"
    "a header-only unit among separate-runtime ones|main.o,part.o,impl.o,header_only.o|lazytensor_ERROR_a_unit_is_header_only_while_another_uses_LAZYTENSOR_SEPARATE_RUNTIME"
    "two implementation units|main.o,part.o,impl.o,impl.o|lazytensor_ERROR_LAZYTENSOR_IMPLEMENTATION_is_defined_in_more_than_one_unit")
foreach(mistake IN LISTS mistakes)
    string(REPLACE "|" ";" fields "${mistake}")
    list(GET fields 0 what)
    list(GET fields 1 objects)
    list(GET fields 2 expected)
    string(REPLACE "," ";" objects "${objects}")
    set(paths)
    foreach(o IN LISTS objects)
        list(APPEND paths ${WORK_DIR}/${o})
    endforeach()
    link_program(${paths})
    if(link_rc EQUAL 0 OR NOT link_output MATCHES "${expected}")
        message(FATAL_ERROR "${what}: the link should have failed naming ${expected}; it gave (${link_rc}):\n${link_output}")
    endif()
    message("${what}: the link fails naming ${expected}")
endforeach()
