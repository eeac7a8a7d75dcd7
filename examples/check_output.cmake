# SPDX-License-Identifier: MIT
# Runs an example and checks its output (stdout and stderr together) against expected/<name>.txt:
# each line there that is not empty or a # comment is a regular expression that must match, in
# the order given, somewhere after the previous one's match.
#   cmake -DPROGRAM=<exe> -DEXPECTED=<file> -DWORK_DIR=<dir> [-DARGS=<;-list>] [-DRANKS=<n> -DMPIEXEC=<mpiexec>]
#         -P check_output.cmake
# With RANKS above 0, the example runs as that many ranks under MPIEXEC.
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
set(launcher)
if(RANKS GREATER 0)
    set(launcher "${MPIEXEC}" -n ${RANKS})
endif()
execute_process(COMMAND ${launcher} "${PROGRAM}" ${ARGS} WORKING_DIRECTORY "${WORK_DIR}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE output ERROR_VARIABLE output)
message("${output}")
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${PROGRAM} exited with ${rc}")
endif()
# The patterns are taken line by line with string(FIND), not as a CMake list: brackets in a
# regular expression would make a list join lines.
file(READ "${EXPECTED}" patterns)
set(rest "${output}")
while(NOT patterns STREQUAL "")
    string(FIND "${patterns}" "\n" end)
    if(end EQUAL -1)
        set(pattern "${patterns}")
        set(patterns "")
    else()
        string(SUBSTRING "${patterns}" 0 ${end} pattern)
        math(EXPR next "${end} + 1")
        string(SUBSTRING "${patterns}" ${next} -1 patterns)
    endif()
    if(pattern STREQUAL "" OR pattern MATCHES "^#")
        continue()
    endif()
    string(REGEX MATCH "${pattern}" found "${rest}")
    if(found STREQUAL "")
        message(FATAL_ERROR "the output does not contain (after the lines matched before it): ${pattern}")
    endif()
    string(FIND "${rest}" "${found}" at)
    string(LENGTH "${found}" length)
    math(EXPR after "${at} + ${length}")
    string(SUBSTRING "${rest}" ${after} -1 rest)
endwhile()
