// The core tests' main: the same process set-up as txl's own main (the OpenBLAS kernel set
// plan_cpu decides for this CPU, passive OpenMP waiting), then GoogleTest.
#include <gtest/gtest.h>

#include "txl/platform/runtime.h"

int main(int argc, char** argv) {
  txl::ensure_fast_blas(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
