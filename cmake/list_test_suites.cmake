# Run by ctest (through the include file txl_add_test_suites writes, cmake/test_suites.cmake):
# lists the suites of one GoogleTest binary and adds a test for each.
# In: TXL_SUITES_TARGET, TXL_SUITES_EXE, TXL_SUITES_ENV (a list of VAR=VALUE).
# A suite whose every test was skipped reports "[  PASSED  ] 0 tests" and is shown as
# skipped; skips inside a suite that ran are printed by scripts/test.sh.
if(NOT EXISTS "${TXL_SUITES_EXE}")
  # Not built: a test that fails and says so, as gtest_discover_tests does.
  add_test("${TXL_SUITES_TARGET}_NOT_BUILT" "${TXL_SUITES_EXE}")
  return()
endif()
execute_process(COMMAND "${TXL_SUITES_EXE}" --gtest_list_tests
  OUTPUT_VARIABLE listing ERROR_VARIABLE listing_errors RESULT_VARIABLE status TIMEOUT 120)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${TXL_SUITES_EXE} --gtest_list_tests failed (${status}):\n"
    "${listing}${listing_errors}")
endif()
string(REPLACE ";" "," listing "${listing}")
string(REPLACE "\n" ";" lines "${listing}")
foreach(line IN LISTS lines)
  # Suite lines start in column 0 ("Suite." or "Prefix/Suite.  # TypeParam = ..."); the
  # tests under them are indented.
  if(NOT line MATCHES "^([^ #.][^ #]*)\\.")
    continue()
  endif()
  set(suite "${CMAKE_MATCH_1}")
  list(FIND TXL_SUITES_SEEN "${suite}" seen_at)  # not IN_LIST: ctest sets no policies
  if(NOT seen_at EQUAL -1)
    message(FATAL_ERROR "test suite ${suite} (in ${TXL_SUITES_EXE}) is also in another test "
      "binary: rename one, since each suite is one ctest test")
  endif()
  list(APPEND TXL_SUITES_SEEN "${suite}")
  add_test("${suite}" "${TXL_SUITES_EXE}" "--gtest_filter=${suite}.*")
  set_tests_properties("${suite}" PROPERTIES
    ENVIRONMENT "${TXL_SUITES_ENV}"
    SKIP_REGULAR_EXPRESSION "\\[  PASSED  \\] 0 tests")
endforeach()
