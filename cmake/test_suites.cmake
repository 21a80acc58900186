# One CTest test per GoogleTest suite (`Suite.*`), listed when ctest starts.
#
# Why not gtest_discover_tests: it registers one test per TEST, and each test is then a
# process of its own. A txl test process spends about 0.6 s loading LibTorch before its
# first line runs, which over a thousand tests was half the suite's time on 2 cores. A
# suite per process keeps what matters of the isolation (a crash takes one suite down,
# not the run; `ctest -R Name` still picks by suite name) at a tenth of the start-ups.
#
# Listing happens when ctest starts (never during the build), so a build whose binaries
# cannot start on the build machine (scripts/check_cuda_build.sh) still builds.
#
# txl_add_test_suites(TARGET [ENVIRONMENT VAR=VALUE...])
function(txl_add_test_suites target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "" "ENVIRONMENT")
  set(include_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_suites.cmake")
  file(GENERATE OUTPUT "${include_file}" CONTENT
"set(TXL_SUITES_TARGET [==[${target}]==])
set(TXL_SUITES_EXE [==[$<TARGET_FILE:${target}>]==])
set(TXL_SUITES_ENV [==[${ARG_ENVIRONMENT}]==])
include([==[${PROJECT_SOURCE_DIR}/cmake/list_test_suites.cmake]==])
")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${include_file}")
endfunction()
