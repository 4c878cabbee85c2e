# Writes the ctest cases of one GoogleTest binary: one case per test suite (fixture), each running
# that suite's tests in one process with --gtest_filter=SUITE.*. Run after every link of the binary
# (draplane_test in Targets.cmake), like CMake's own gtest_discover_tests, which makes a case of
# every TEST: under the sanitizers a test process costs ~0.3 CPU-s before its first test (ASan and
# UBSan's data, LeakSanitizer's scan at exit); one process per suite instead of per test took the
# asan ctest from 1,861 to 1,575 CPU-s (docs/design/build.md). The list is written when the binary
# links, so a change to this script reaches a build folder with its next link of each test.
#
# Inputs (-D): TEST_EXECUTABLE, CTEST_FILE (written), WORKING_DIR, LABELS (a ;-list).
execute_process(
  COMMAND "${TEST_EXECUTABLE}" --gtest_list_tests
  WORKING_DIRECTORY "${WORKING_DIR}"
  TIMEOUT 60
  OUTPUT_VARIABLE listing
  ERROR_VARIABLE listing_errors
  RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR
    "${TEST_EXECUTABLE} --gtest_list_tests failed (${result}):\n${listing}${listing_errors}")
endif()

# A suite line starts in column one and ends with '.', possibly followed by a comment
# ("TypedSuite/0.  # TypeParam = int"); test lines are indented.
string(REPLACE ";" "\\;" listing "${listing}")
string(REPLACE "\n" ";" lines "${listing}")
set(suites "")
foreach(line IN LISTS lines)
  if(line MATCHES "^([^ #][^ ]*)\\.( .*)?$")
    list(APPEND suites "${CMAKE_MATCH_1}")
  endif()
endforeach()
list(REMOVE_DUPLICATES suites)

# LABELS is written as a ;-list, so that ctest reads "unit;tsan" as two labels.
set(content "")
foreach(suite IN LISTS suites)
  string(APPEND content
    "add_test([=[${suite}]=] \"${TEST_EXECUTABLE}\" [=[--gtest_filter=${suite}.*]=] --gtest_brief=1)\n"
    "set_tests_properties([=[${suite}]=] PROPERTIES WORKING_DIRECTORY \"${WORKING_DIR}\""
    " LABELS \"${LABELS}\")\n")
endforeach()
file(WRITE "${CTEST_FILE}" "${content}")
