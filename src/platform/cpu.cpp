#include "txl/platform/cpu.h"

#include <cpuid.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
#include <sstream>

#include "txl/util/env.h"

namespace txl {

namespace {

// The fields of CpuFlags with their /proc/cpuinfo names: one table for parsing and printing.
struct FlagField {
  const char* name;
  bool CpuFlags::*field;
};
const FlagField kFlagFields[] = {
    {"avx", &CpuFlags::avx},
    {"avx2", &CpuFlags::avx2},
    {"fma", &CpuFlags::fma},
    {"avx512f", &CpuFlags::avx512f},
    {"avx512bw", &CpuFlags::avx512bw},
    {"avx512dq", &CpuFlags::avx512dq},
    {"avx512vl", &CpuFlags::avx512vl},
    {"avx512cd", &CpuFlags::avx512cd},
    {"avx512_bf16", &CpuFlags::avx512_bf16},
    {"amx_bf16", &CpuFlags::amx_bf16},
};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// The widest vector instructions a kernel set needs, or the CPU offers.
enum class Level { kSse = 0, kAvx = 1, kAvx2 = 2, kAvx512 = 3 };

// The instruction set SkylakeX's kernels are compiled for (-march=skylake-avx512).
bool has_avx512_core(const CpuFlags& c) {
  return c.avx512f && c.avx512bw && c.avx512dq && c.avx512vl && c.avx512cd;
}

Level cpu_level(const CpuFlags& c) {
  if (has_avx512_core(c)) return Level::kAvx512;
  if (c.avx2 && c.fma) return Level::kAvx2;
  if (c.avx) return Level::kAvx;
  return Level::kSse;
}

// OpenBLAS 0.3.21's x86-64 kernel sets by what they need; names not listed (the SSE-era
// sets: Prescott, Core2, Nehalem, Opteron, ...) need no more than SSE3.
Level core_level(const std::string& core) {
  static const std::set<std::string> avx512 = {"skylakex", "cooperlake", "sapphirerapids"};
  static const std::set<std::string> avx2 = {"haswell", "zen", "excavator"};
  static const std::set<std::string> avx = {"sandybridge", "bulldozer", "piledriver",
                                            "steamroller"};
  const auto name = lower(core);
  if (avx512.count(name) != 0) return Level::kAvx512;
  if (avx2.count(name) != 0) return Level::kAvx2;
  if (avx.count(name) != 0) return Level::kAvx;
  return Level::kSse;
}

// The fastest kernel set this CPU can run, in OPENBLAS_CORETYPE spelling.
std::string best_core(const CpuFlags& c) {
  switch (cpu_level(c)) {
    case Level::kAvx512:
      return "SkylakeX";
    case Level::kAvx2:
      return "Haswell";
    case Level::kAvx:
      return "Sandybridge";
    case Level::kSse:
      break;
  }
  return "Prescott";
}

Bf16Support bf16_support(const CpuFlags& c) {
  if (c.amx_bf16) return Bf16Support::kMatrixUnits;
  if (c.avx512_bf16) return Bf16Support::kVectorUnits;
  return Bf16Support::kEmulated;
}

bool bit(unsigned value, int index) { return ((value >> index) & 1u) != 0; }

// Whether the OS saves the AMX tile state (XCR0 bits 17 and 18, XTILECFG and XTILEDATA):
// without it the instructions fault even where cpuid lists them (Intel SDM vol. 1, 13.3).
bool os_enables_amx() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0 || !bit(ecx, 27)) return false;  // OSXSAVE
  unsigned xcr0_low = 0, xcr0_high = 0;
  __asm__ volatile("xgetbv" : "=a"(xcr0_low), "=d"(xcr0_high) : "c"(0));
  return bit(xcr0_low, 17) && bit(xcr0_low, 18);
}

CpuFlags cpuid_flags() {
  __builtin_cpu_init();
  CpuFlags f;
  // libgcc's checks include the OS side (XCR0 enables the AVX and AVX-512 registers).
  f.avx = __builtin_cpu_supports("avx");
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512bw = __builtin_cpu_supports("avx512bw");
  f.avx512dq = __builtin_cpu_supports("avx512dq");
  f.avx512vl = __builtin_cpu_supports("avx512vl");
  f.avx512cd = __builtin_cpu_supports("avx512cd");
  f.avx512_bf16 = f.avx512f && __builtin_cpu_supports("avx512bf16");
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  // Leaf 7, sub-leaf 0, EDX bit 22: AMX-BF16 (Intel SDM vol. 2, CPUID).
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) != 0) {
    f.amx_bf16 = bit(edx, 22) && os_enables_amx();
  }
  return f;
}

}  // namespace

CpuFlags parse_cpu_flags(const std::string& list) {
  std::string spaced = list;
  std::replace(spaced.begin(), spaced.end(), ',', ' ');
  std::istringstream words(spaced);
  std::set<std::string> names;
  for (std::string w; words >> w;) names.insert(lower(w));
  CpuFlags f;
  for (const auto& ff : kFlagFields) f.*ff.field = names.count(ff.name) != 0;
  return f;
}

std::vector<std::string> unknown_cpu_flags(const std::string& list) {
  std::string spaced = list;
  std::replace(spaced.begin(), spaced.end(), ',', ' ');
  std::istringstream words(spaced);
  std::vector<std::string> unknown;
  for (std::string w; words >> w;) {
    const bool known = std::any_of(std::begin(kFlagFields), std::end(kFlagFields),
                                   [&](const auto& ff) { return lower(w) == ff.name; });
    if (!known) unknown.push_back(w);
  }
  return unknown;
}

std::string to_string(const CpuFlags& flags) {
  std::string out;
  for (const auto& ff : kFlagFields) {
    if (!(flags.*ff.field)) continue;
    if (!out.empty()) out += ' ';
    out += ff.name;
  }
  return out;
}

CpuFlags detect_cpu_flags() {
  const auto forced = env_text("TXL_CPU_FLAGS");
  if (!forced) return cpuid_flags();
  return parse_cpu_flags(*forced);
}

std::string cpu_model_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon != std::string::npos && colon + 2 <= line.size()) return line.substr(colon + 2);
  }
  return "unknown";
}

std::string to_string(Bf16Support support) {
  switch (support) {
    case Bf16Support::kMatrixUnits:
      return "matrix units (amx_bf16)";
    case Bf16Support::kVectorUnits:
      return "vector instructions (avx512_bf16), no matrix units";
    case Bf16Support::kEmulated:
      break;
  }
  return "emulated (no avx512_bf16, no amx_bf16)";
}

bool can_run_openblas_core(const CpuFlags& cpu, const std::string& core) {
  const auto name = lower(core);
  // Cooper Lake's and Sapphire Rapids' sets add bf16 kernels to SkylakeX's.
  if (name == "cooperlake" && !cpu.avx512_bf16) return false;
  if (name == "sapphirerapids" && !(cpu.avx512_bf16 && cpu.amx_bf16)) return false;
  return static_cast<int>(core_level(core)) <= static_cast<int>(cpu_level(cpu));
}

CpuPlan plan_cpu(const CpuFlags& cpu, const OpenBlasState& blas) {
  CpuPlan plan;
  const std::string best = best_core(cpu);
  if (blas.env_coretype.has_value()) {
    // The user's choice stands unless it cannot run here: then it would end the process
    // with SIGILL at the first matrix multiply.
    if (!can_run_openblas_core(cpu, *blas.env_coretype)) {
      plan.openblas_coretype = best;
      const std::string has = to_string(cpu);
      plan.openblas_note = "OPENBLAS_CORETYPE=" + *blas.env_coretype +
                           " needs instructions this CPU does not have (it has: " +
                           (has.empty() ? std::string("none of avx, avx2, avx512") : has) +
                           "); using " + best + " instead.";
    }
  } else if (blas.loaded && core_level(blas.core) == Level::kSse &&
             cpu_level(cpu) >= Level::kAvx2) {
    // OpenBLAS did not recognise the CPU and fell back to SSE-era kernels.
    plan.openblas_coretype = best;
  }
  plan.bf16 = bf16_support(cpu);
  if (plan.bf16 == Bf16Support::kEmulated) {
    plan.bf16_note =
        "bf16 is emulated on this CPU (no avx512_bf16, no amx_bf16 instructions): oneDNN converts "
        "every operand in software and bf16 matrix multiplies run ~15x slower than fp32 (measured "
        "on an AVX2-only AMD EPYC: ~4 against ~60 GFLOP/s). Use fp32 here (train.precision or "
        "--precision fp32).";
  } else if (plan.bf16 == Bf16Support::kVectorUnits) {
    plan.bf16_note =
        "bf16 runs on vector instructions here (avx512_bf16, no amx_bf16 matrix units) and can be "
        "slower than fp32 or faster, by CPU: on an Intel Xeon of this kind bf16 training ran at "
        "0.65x fp32's tokens/s (bf16 GEMM 143 against 198 GFLOP/s fp32), on an AMD EPYC (Zen 5) "
        "at 1.3x (GEMM 900 against 450 GFLOP/s; 2 threads). Compare `txl bench --precision bf16` "
        "with `--precision fp32` on this CPU before choosing bf16.";
  }
  return plan;
}

}  // namespace txl
