// The core tests' main: the same process set-up as txl's own main (a backtrace on a crash,
// the OpenBLAS kernel set plan_cpu decides for this CPU, passive OpenMP waiting), then
// GoogleTest. The token cache goes to the build folder (tests never write to the user's
// ~/.cache), unless set.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "txl/platform/crash_report.h"
#include "txl/platform/runtime.h"

int main(int argc, char** argv) {
  txl::install_crash_report();
  txl::ensure_fast_blas(argc, argv);
  const std::string cache =
      (std::filesystem::path(TXL_BINARY).parent_path() / "test-token-cache").string();
  ::setenv("TXL_CACHE_DIR", cache.c_str(), /*overwrite=*/0);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
