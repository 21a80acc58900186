// The CPU decisions end to end in the real `txl`: a kernel set the CPU cannot run is
// replaced before the first matrix multiply, and bf16 on a CPU that emulates it is named.
// TXL_CPU_FLAGS makes txl decide as on another CPU, so both paths run on every machine;
// the one test that needs the real thing skips, saying why, where the CPU does not fit.
#include <gtest/gtest.h>

#include <string>

#include "cli_harness.h"
#include "txl/platform/cpu.h"

namespace txl {
namespace {

using testing::run_txl;

const char* const kAvx2Only = "TXL_CPU_FLAGS=avx avx2 fma";

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A LibTorch without OpenBLAS (PyTorch's wheels bring their own BLAS) has no core type to
// choose: `txl info` says "blas none" there.
bool without_openblas(const std::string& info) { return contains(info, "blas         none"); }

TEST(CpuCli, ACoreTypeTheCpuCannotRunIsReplacedWithAWarning) {
  const auto r = run_txl({"info", "--no-bench"}, {kAvx2Only, "OPENBLAS_CORETYPE=SkylakeX"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  if (without_openblas(r.out)) GTEST_SKIP() << "this LibTorch has no OpenBLAS:\n" << r.out;
  EXPECT_TRUE(
      contains(r.err, "OPENBLAS_CORETYPE=SkylakeX needs instructions this CPU does not have"))
      << r.err;
  EXPECT_TRUE(contains(r.out, "core type Haswell")) << r.out;
  EXPECT_TRUE(contains(r.out, "cpu flags    avx avx2 fma (from TXL_CPU_FLAGS)")) << r.out;
  EXPECT_TRUE(contains(r.out, "bf16         emulated")) << r.out;
}

TEST(CpuCli, ACoreTypeTheCpuCanRunIsKept) {
  const auto r = run_txl({"info", "--no-bench"}, {kAvx2Only, "OPENBLAS_CORETYPE=Haswell"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  if (without_openblas(r.out)) GTEST_SKIP() << "this LibTorch has no OpenBLAS:\n" << r.out;
  EXPECT_FALSE(contains(r.err, "OPENBLAS_CORETYPE")) << r.err;
  EXPECT_TRUE(contains(r.out, "core type Haswell")) << r.out;
}

// What scripts export before starting the test binaries (README, Tests): the variables the
// start-up decided, or that the user set, as NAME=value lines.
TEST(CpuCli, InfoEnvPrintsTheStartUpVariables) {
  // The harness sets OMP_WAIT_POLICY=PASSIVE.
  const auto r = run_txl({"info", "--env"}, {"TXL_NO_BLAS_FIX=1", "OPENBLAS_CORETYPE=Haswell"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "OPENBLAS_CORETYPE=Haswell\nOMP_WAIT_POLICY=PASSIVE\n");
}

// The crash of the issue, for real: SkylakeX kernels on a CPU without AVX-512.
TEST(CpuCli, SkylakeXCoreTypeOnACpuWithoutAvx512RunsItsMatrixMultiplies) {
  const auto cpu = detect_cpu_flags();
  if (cpu.avx512f) {
    GTEST_SKIP() << "needs a CPU without AVX-512 (this one has " << to_string(cpu)
                 << "); CpuCli.ACoreTypeTheCpuCannotRunIsReplacedWithAWarning covers the decision";
  }
  const auto r = run_txl({"info"}, {"OPENBLAS_CORETYPE=SkylakeX"});
  ASSERT_EQ(r.code, 0) << "exit " << r.code << "\n" << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "gemm fp32")) << r.out;
}

}  // namespace
}  // namespace txl
