// plan_cpu over the flag sets of CPUs the project meets (whatever CPU runs the tests), the
// flag parser, and cpuid against the kernel's own /proc/cpuinfo on the machine at hand.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "txl/platform/cpu.h"

namespace txl {
namespace {

// Flag lines as Linux prints them (abridged to the vector extensions and a few others).
const char* const kEpycAvx2 =  // AMD EPYC 7B13 (Zen 3): AVX2 + FMA, no AVX-512, no bf16
    "fpu sse sse2 ssse3 fma cx16 sse4_1 sse4_2 movbe popcnt aes xsave avx f16c rdrand avx2 bmi2 "
    "sha_ni";
const char* const kSkylakeX =  // Intel Xeon Gold 6148: AVX-512, no bf16 instructions
    "fpu sse sse2 ssse3 fma sse4_1 sse4_2 avx f16c avx2 avx512f avx512dq avx512cd avx512bw "
    "avx512vl";
const char* const kSapphireRapids =  // Intel Xeon (Sapphire Rapids): AVX-512, AVX512_BF16, AMX
    "fma avx f16c avx2 avx512f avx512dq avx512ifma avx512cd avx512bw avx512vl avx_vnni avx512_bf16 "
    "avx512vbmi avx512_vnni amx_bf16 avx512_fp16 amx_tile amx_int8";
const char* const kZen4 =  // AMD EPYC 9004 (Zen 4): AVX-512 with AVX512_BF16, no AMX
    "fma avx f16c avx2 avx512f avx512dq avx512ifma avx512cd avx512bw avx512vl avx512_bf16 "
    "avx512vbmi";
const char* const kSseOnly = "fpu sse sse2 pni ssse3 sse4_1 sse4_2";

OpenBlasState detected(const std::string& core) {
  OpenBlasState s;
  s.loaded = true;
  s.core = core;
  return s;
}

OpenBlasState forced(const std::string& env_coretype, const std::string& core) {
  OpenBlasState s = detected(core);
  s.env_coretype = env_coretype;
  return s;
}

TEST(CpuFlags, ParsesLinuxNamesIgnoringTheRest) {
  const auto f = parse_cpu_flags(kEpycAvx2);
  EXPECT_TRUE(f.avx && f.avx2 && f.fma);
  EXPECT_FALSE(f.avx512f || f.avx512bw || f.avx512_bf16 || f.amx_bf16);
  EXPECT_EQ(to_string(f), "avx avx2 fma");
  EXPECT_EQ(to_string(parse_cpu_flags(kSapphireRapids)),
            "avx avx2 fma avx512f avx512bw avx512dq avx512vl avx512cd avx512_bf16 amx_bf16");
  EXPECT_EQ(to_string(parse_cpu_flags("AVX2, fma,avx")), "avx avx2 fma") << "commas and case";
  EXPECT_EQ(to_string(parse_cpu_flags("")), "");
  EXPECT_EQ(to_string(parse_cpu_flags("avx512")), "") << "no prefix matching";
  EXPECT_EQ(unknown_cpu_flags("avx2, avx512bf16 FMA sse"),
            (std::vector<std::string>{"avx512bf16", "sse"}))
      << "txl info lists them (a typo among them)";
}

TEST(CpuPlan, AmdAvx2OnlyKeepsOpenBlasChoiceAndWarnsAboutBf16) {
  const auto cpu = parse_cpu_flags(kEpycAvx2);
  const auto plan = plan_cpu(cpu, detected("Zen"));
  EXPECT_EQ(plan.openblas_coretype, "");
  EXPECT_EQ(plan.bf16, Bf16Support::kEmulated);
  EXPECT_NE(plan.bf16_note.find("~15x slower than fp32"), std::string::npos) << plan.bf16_note;
  EXPECT_NE(plan.bf16_note.find("fp32"), std::string::npos);
}

TEST(CpuPlan, AmdAvx2OnlyReplacesAnAvx512CoreTypeInsteadOfDyingOfSigill) {
  const auto cpu = parse_cpu_flags(kEpycAvx2);
  for (const char* wanted : {"SkylakeX", "skylakex", "Cooperlake", "SapphireRapids"}) {
    const auto plan = plan_cpu(cpu, forced(wanted, wanted));
    EXPECT_EQ(plan.openblas_coretype, "Haswell") << wanted;
    EXPECT_NE(plan.openblas_note.find(std::string("OPENBLAS_CORETYPE=") + wanted),
              std::string::npos)
        << plan.openblas_note;
    EXPECT_NE(plan.openblas_note.find("using Haswell"), std::string::npos) << plan.openblas_note;
  }
  // A choice the CPU can run stands, even a slow one.
  for (const char* fine : {"Haswell", "Zen", "Prescott", "Sandybridge"}) {
    EXPECT_EQ(plan_cpu(cpu, forced(fine, fine)).openblas_coretype, "") << fine;
  }
}

TEST(CpuPlan, MisdetectedCpusGetTheirFastestKernels) {
  // OpenBLAS 0.3.21 calls CPUs it does not know Prescott (SSE3 kernels).
  EXPECT_EQ(plan_cpu(parse_cpu_flags(kZen4), detected("Prescott")).openblas_coretype, "SkylakeX");
  EXPECT_EQ(plan_cpu(parse_cpu_flags(kSkylakeX), detected("Nehalem")).openblas_coretype,
            "SkylakeX");
  EXPECT_EQ(plan_cpu(parse_cpu_flags(kEpycAvx2), detected("Prescott")).openblas_coretype,
            "Haswell");
  // Recognised CPUs keep OpenBLAS's choice (Zen 4 is also seen detected as Cooperlake).
  EXPECT_EQ(plan_cpu(parse_cpu_flags(kZen4), detected("Cooperlake")).openblas_coretype, "");
  EXPECT_EQ(plan_cpu(parse_cpu_flags(kSkylakeX), detected("SkylakeX")).openblas_coretype, "");
  EXPECT_EQ(
      plan_cpu(parse_cpu_flags(kSapphireRapids), detected("SapphireRapids")).openblas_coretype, "");
  // Without OpenBLAS (reference BLAS, MKL) there is nothing to set.
  EXPECT_EQ(plan_cpu(parse_cpu_flags(kZen4), OpenBlasState{}).openblas_coretype, "");
  // No AVX2: the SSE kernels are what this CPU runs best.
  EXPECT_EQ(plan_cpu(parse_cpu_flags(kSseOnly), detected("Prescott")).openblas_coretype, "");
}

TEST(CpuPlan, Avx512WithoutBf16) {
  const auto cpu = parse_cpu_flags(kSkylakeX);
  const auto plan = plan_cpu(cpu, forced("SkylakeX", "SkylakeX"));
  EXPECT_EQ(plan.openblas_coretype, "");
  EXPECT_EQ(plan.bf16, Bf16Support::kEmulated);
  EXPECT_FALSE(plan.bf16_note.empty());
  // Cooper Lake's kernel set adds bf16 instructions this CPU lacks.
  EXPECT_EQ(plan_cpu(cpu, forced("Cooperlake", "Cooperlake")).openblas_coretype, "SkylakeX");
}

TEST(CpuPlan, Avx512WithAmxHasFastBf16) {
  const auto cpu = parse_cpu_flags(kSapphireRapids);
  const auto plan = plan_cpu(cpu, forced("SkylakeX", "SkylakeX"));
  EXPECT_EQ(plan.openblas_coretype, "");
  EXPECT_EQ(plan.bf16, Bf16Support::kMatrixUnits);
  EXPECT_EQ(plan.bf16_note, "");
  EXPECT_EQ(plan_cpu(cpu, forced("SapphireRapids", "SapphireRapids")).openblas_coretype, "");
}

TEST(CpuPlan, Zen4HasBf16VectorInstructions) {
  const auto plan = plan_cpu(parse_cpu_flags(kZen4), detected("Cooperlake"));
  EXPECT_EQ(plan.bf16, Bf16Support::kVectorUnits);
  // Vector bf16 without matrix units measured slower than fp32: said, with how to check.
  EXPECT_NE(plan.bf16_note.find("can be slower than fp32"), std::string::npos) << plan.bf16_note;
  EXPECT_NE(plan.bf16_note.find("txl bench --precision bf16"), std::string::npos);
}

TEST(CpuPlan, NoAvxAtAllFallsBackToPrescott) {
  const auto plan = plan_cpu(parse_cpu_flags(kSseOnly), forced("Haswell", "Haswell"));
  EXPECT_EQ(plan.openblas_coretype, "Prescott");
  EXPECT_NE(plan.openblas_note.find("none of avx"), std::string::npos) << plan.openblas_note;
}

TEST(CpuFlags, TxlCpuFlagsReplacesDetection) {
  ::setenv("TXL_CPU_FLAGS", "avx avx2 fma", 1);
  const auto f = detect_cpu_flags();
  ::unsetenv("TXL_CPU_FLAGS");
  EXPECT_EQ(to_string(f), "avx avx2 fma");
}

// The "flags" line of /proc/cpuinfo: the kernel's view of the same cpuid bits.
std::string proc_cpuinfo_flags() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("flags", 0) == 0) return line.substr(line.find(':') + 1);
  }
  return "";
}

TEST(CpuFlags, CpuidAgreesWithTheKernelOnThisMachine) {
  const std::string line = proc_cpuinfo_flags();
  if (line.empty()) GTEST_SKIP() << "no flags line in /proc/cpuinfo on this system";
  ASSERT_EQ(std::getenv("TXL_CPU_FLAGS"), nullptr) << "unset TXL_CPU_FLAGS to run this test";
  EXPECT_EQ(to_string(detect_cpu_flags()), to_string(parse_cpu_flags(line)))
      << "cpuid (left) and /proc/cpuinfo (right) disagree on " << cpu_model_name();
}

}  // namespace
}  // namespace txl
