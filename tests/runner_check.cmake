# ctest cpu.runner: kiln_tests keeps Catch2's own arguments intact on every machine. A name
# filter runs the named CPU test (not 0 tests), and "-r junit -o FILE" writes a junit report.
#   cmake -DKILN_TESTS=<kiln_tests> -DOUT=<folder> -P runner_check.cmake
set(name "number_lines prefixes every line with its number")
set(report "${OUT}/runner_check.junit.xml")
file(REMOVE "${report}")
execute_process(COMMAND "${KILN_TESTS}" "${name}" -r junit -o "${report}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "kiln_tests \"${name}\" -r junit -o FILE exited ${rc}:\n${out}${err}")
endif()
if(NOT EXISTS "${report}")
  message(FATAL_ERROR "kiln_tests -o ${report} wrote no file:\n${out}${err}")
endif()
file(READ "${report}" xml)
string(REGEX MATCH "<testsuite [^>]* tests=\"([0-9]+)\"" suite "${xml}")
if(NOT suite OR CMAKE_MATCH_1 LESS 1)
  message(FATAL_ERROR "the name filter ran no test; report:\n${xml}")
endif()
if(NOT xml MATCHES "<testcase [^>]*name=\"${name}\"")
  message(FATAL_ERROR "'${name}' is not in the report:\n${xml}")
endif()
# Two comma-separated names run both (each term keeps its own filter).
execute_process(COMMAND "${KILN_TESTS}" "${name},cache key hex round-trips and rejects malformed text"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "in 2 test cases")
  message(FATAL_ERROR "two comma-separated names did not run 2 tests (exit ${rc}):\n${out}${err}")
endif()
