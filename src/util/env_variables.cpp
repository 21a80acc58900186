#include "txl/util/env_variables.h"

#include <unistd.h>

#include <cstring>

#include "txl/util/error.h"

namespace txl {

const std::vector<EnvVariable>& env_variables() {
  static const std::vector<EnvVariable> table = {
      // Switches: the default is the fast path (or the fix); the other value is for
      // comparisons and for working around a fault.
      {"TXL_FUSED_ATTENTION", EnvKind::kSwitch,
       "0: CPU attention on LibTorch's operators instead of the fused pass"},
      {"TXL_SDPA", EnvKind::kSwitch, "0: no scaled_dot_product_attention on GPUs"},
      {"TXL_SDPA_POSITION", EnvKind::kSwitch,
       "0: the learned position terms (relative, t5, kerple, fire) not through "
       "scaled_dot_product_attention on GPUs"},
      {"TXL_ONEDNN", EnvKind::kSwitch, "0: no direct oneDNN matrix products"},
      {"TXL_MULTI_TENSOR", EnvKind::kSwitch,
       "0: gradient clipping and AdamW one kernel per parameter"},
      {"TXL_TF32", EnvKind::kSwitch, "0: CUDA float32 matrix products without TF32"},
      {"TXL_SYSTEM_MALLOC", EnvKind::kSwitch,
       "1: the C library's allocator alone, without txl's block-reusing one"},
      {"TXL_NO_BLAS_FIX", EnvKind::kSwitch,
       "1: OpenBLAS's core type left as OpenBLAS picks it (no re-execution)"},
      {"TXL_BACKTRACE", EnvKind::kSwitch, "1: LibTorch's backtrace in error messages"},
      // Values.
      {"TXL_CPU_FLAGS", EnvKind::kValue,
       "CPU flags (Linux's names): decide as on a CPU with only these"},
      {"TXL_FUSED_ROW_BLOCK", EnvKind::kValue,
       "query rows per block of the fused CPU attention (a positive integer; default 32)"},
      {"TXL_MEMORY_LIMIT_MB", EnvKind::kValue, "memory txl plans within, in MB"},
      {"TXL_DIST_TIMEOUT_S", EnvKind::kValue,
       "seconds before data-parallel training gives up a rank (default 600)"},
      {"TXL_CACHE_DIR", EnvKind::kValue, "tokenized splits' cache folder (off = no cache)"},
      {"TXL_SPM_PLUGIN", EnvKind::kValue, "the sentencepiece plugin to load"},
      // Set by txl for its children, or by the tests.
      {"TXL_STUDY_PARENT", EnvKind::kInternal, "set by txl study for the runs it starts"},
      {"TXL_INJECT_STOP_AT_STEP", EnvKind::kInternal, "fault injection (tests)"},
      {"TXL_INJECT_NAN_AT_STEP", EnvKind::kInternal, "fault injection (tests)"},
      {"TXL_INJECT_KILL_AT_STEP", EnvKind::kInternal, "fault injection (tests)"},
      {"TXL_INJECT_KILL_RANK", EnvKind::kInternal, "fault injection (tests)"},
      {"TXL_FUZZ_SEED", EnvKind::kInternal, "read by the fuzz tests"},
      {"TXL_FUZZ_SCALE", EnvKind::kInternal, "read by the fuzz tests"},
      {"TXL_TEST_MARK", EnvKind::kInternal, "marks processes started by the tests"},
      {"TXL_ENV_TEST_SWITCH", EnvKind::kInternal, "read by the tests of env_is"},
  };
  return table;
}

namespace {

const EnvVariable* find_variable(const std::string& name) {
  for (const auto& v : env_variables())
    if (name == v.name) return &v;
  return nullptr;
}

}  // namespace

std::vector<std::string> check_env_variables(char* const* environment) {
  if (environment == nullptr) environment = environ;
  std::vector<std::string> unknown;
  for (char* const* entry = environment; *entry != nullptr; ++entry) {
    const char* eq = std::strchr(*entry, '=');
    if (eq == nullptr || std::strncmp(*entry, "TXL_", 4) != 0) continue;
    const char* begin = *entry;
    const std::string name(begin, eq), value(eq + 1);
    const EnvVariable* v = find_variable(name);
    if (v == nullptr) {
      unknown.push_back(name);
    } else if (v->kind == EnvKind::kSwitch && value != "0" && value != "1") {
      throw InputError(name + "=\"" + value + "\": expected 0 or 1 (" + name + "=" + v->does +
                       "; unset: the default)");
    }
  }
  return unknown;
}

}  // namespace txl
