// The core tests' main: the same process set-up as txl's own main (a backtrace on a crash,
// the OpenBLAS kernel set plan_cpu decides for this CPU, passive OpenMP waiting), then
// GoogleTest. The token cache goes to the build folder (tests never write to the user's
// ~/.cache), unless set. When every test passed, this process's scratch folders
// (cli_harness.h: TempDir/txl_<suite>_<test>_<pid> and txl_cli_<pid>_*) are removed, so that a
// suite run leaves nothing behind in /tmp; a failed run keeps them to inspect.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "txl/platform/crash_report.h"
#include "txl/platform/runtime.h"

namespace {

void remove_own_scratch() {
  namespace fs = std::filesystem;
  const std::string pid = std::to_string(::getpid());
  const std::string suffix = "_" + pid, cli_prefix = "txl_cli_" + pid + "_";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(::testing::TempDir(), ec)) {
    const std::string name = entry.path().filename().string();
    const bool scratch = name.rfind("txl_", 0) == 0 && name.size() > suffix.size() &&
                         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
    if (scratch || name.rfind(cli_prefix, 0) == 0) fs::remove_all(entry.path(), ec);
  }
}

}  // namespace

int main(int argc, char** argv) {
  txl::install_crash_report();
  txl::ensure_fast_blas(argc, argv);
  const std::string cache =
      (std::filesystem::path(TXL_BINARY).parent_path() / "test-token-cache").string();
  ::setenv("TXL_CACHE_DIR", cache.c_str(), /*overwrite=*/0);
  ::testing::InitGoogleTest(&argc, argv);
  const int result = RUN_ALL_TESTS();
  if (result == 0) remove_own_scratch();
  return result;
}
