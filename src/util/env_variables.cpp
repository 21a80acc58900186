#include "txl/util/env_variables.h"

#include <unistd.h>

#include <cstring>
#include <stdexcept>

#include "txl/util/error.h"

namespace txl {

namespace {

EnvVariable on_off(const char* name, const char* does) {
  return {name, EnvKind::kSwitch, EnvOrigin::kUser, does};
}

EnvVariable integer(const char* name, EnvOrigin origin, int64_t lo, int64_t hi, const char* does) {
  return {name, EnvKind::kInteger, origin, does, lo, hi};
}

EnvVariable value(const char* name, EnvKind kind, EnvOrigin origin, const char* does) {
  return {name, kind, origin, does};
}

// A variable whose empty value means something of its own ("TXL_CPU_FLAGS=": a CPU with
// none of the flags; "OMP_WAIT_POLICY=": the user chose, so txl leaves it alone).
EnvVariable empty_is_set(EnvVariable v) {
  v.empty_is_set = true;
  return v;
}

constexpr EnvOrigin kUser = EnvOrigin::kUser;
constexpr EnvOrigin kForeign = EnvOrigin::kForeign;
constexpr EnvOrigin kTests = EnvOrigin::kTests;

// txl's own variables.
std::vector<EnvVariable> txl_variables() {
  return {
      // Switches: the default is the fast path (or the fix); the other value is for
      // comparisons and for working around a fault.
      on_off("TXL_FUSED_ATTENTION",
             "0: CPU attention on LibTorch's operators instead of the fused pass"),
      on_off("TXL_SDPA", "0: no scaled_dot_product_attention on GPUs"),
      on_off("TXL_SDPA_POSITION",
             "0: the learned position terms (relative, t5, kerple, fire) not through "
             "scaled_dot_product_attention on GPUs"),
      on_off("TXL_ONEDNN", "0: no direct oneDNN matrix products"),
      on_off("TXL_MULTI_TENSOR", "0: gradient clipping and AdamW one kernel per parameter"),
      on_off("TXL_TF32", "0: CUDA float32 matrix products without TF32"),
      on_off("TXL_SYSTEM_MALLOC",
             "1: the C library's allocator alone, without txl's block-reusing one"),
      on_off("TXL_NO_BLAS_FIX",
             "1: OpenBLAS's core type left as OpenBLAS picks it (no re-execution)"),
      on_off("TXL_BACKTRACE", "1: LibTorch's backtrace in error messages"),
      // Values.
      empty_is_set(value("TXL_CPU_FLAGS", EnvKind::kFlags, kUser,
                         "CPU flags (Linux's names): decide as on a CPU with only these")),
      // An empty value is refused, not taken for the default. 1,000,000 rows: far above any
      // query length, so a larger number is a typo.
      empty_is_set(integer("TXL_FUSED_ROW_BLOCK", kUser, 1, 1'000'000,
                           "query rows per block of the fused CPU attention; default 32")),
      value("TXL_MEMORY_LIMIT_MB", EnvKind::kNumber, kUser,
            "the most the whole process may hold, in MiB (a container's size), when lower than "
            "what the machine has"),
      // 86400: a day, far above any wait of a healthy run.
      integer("TXL_DIST_TIMEOUT_S", kUser, 1, 86'400,
              "seconds before data-parallel training gives up a rank; default 600"),
      value("TXL_CACHE_DIR", EnvKind::kText, kUser,
            "tokenized splits' cache folder (off = no cache)"),
      value("TXL_SPM_PLUGIN", EnvKind::kText, kUser, "the sentencepiece plugin to load"),
      // Set by txl for its children.
      value("TXL_STUDY_PARENT", EnvKind::kText, EnvOrigin::kTxl,
            "set by txl study for the runs it starts: the study's process id"),
      // Set by the tests.
      value("TXL_INJECT_STOP_AT_STEP", EnvKind::kSteps, kTests, "fault injection: stop there"),
      value("TXL_INJECT_NAN_AT_STEP", EnvKind::kSteps, kTests, "fault injection: a NaN loss there"),
      value("TXL_INJECT_KILL_AT_STEP", EnvKind::kSteps, kTests, "fault injection: die there"),
      integer("TXL_INJECT_KILL_RANK", kTests, 0, 4095,
              "fault injection: the rank that dies (default every rank)"),
      value("TXL_FUZZ_SEED", EnvKind::kText, kTests, "read by the fuzz tests"),
      value("TXL_FUZZ_SCALE", EnvKind::kText, kTests, "read by the fuzz tests"),
      value("TXL_TEST_MARK", EnvKind::kText, kTests, "marks processes started by the tests"),
      {"TXL_ENV_TEST_SWITCH", EnvKind::kSwitch, kTests, "read by the tests of env_is"},
  };
}

// Other programs' variables that txl reads, with their meaning there.
std::vector<EnvVariable> foreign_variables() {
  return {
      // A distributed launch (torchrun's variables).
      integer("RANK", kForeign, 0, 4095,
              "this process's rank in a data-parallel run, 0 to WORLD_SIZE - 1"),
      integer("WORLD_SIZE", kForeign, 1, 4096,
              "the number of processes of a data-parallel run; default 1"),
      integer("LOCAL_RANK", kForeign, 0, 4095, "the rank among this machine's; default RANK"),
      integer("LOCAL_WORLD_SIZE", kForeign, 1, 4096, "this machine's processes; default 1"),
      value("MASTER_ADDR", EnvKind::kText, kForeign, "rank 0's address"),
      integer("MASTER_PORT", kForeign, 1, 65535, "rank 0's port; default 29500"),
      value("GLOO_SOCKET_IFNAME", EnvKind::kText, kForeign,
            "the network interface Gloo talks through"),
      // OpenBLAS and OpenMP: a choice the user made there is kept (platform/runtime.h).
      empty_is_set(value("OPENBLAS_CORETYPE", EnvKind::kText, kForeign,
                         "OpenBLAS's kernel set; txl sets it where OpenBLAS picks a slow one")),
      empty_is_set(value("OMP_WAIT_POLICY", EnvKind::kText, kForeign,
                         "how OpenMP threads wait; txl sets PASSIVE when it is unset")),
      empty_is_set(value("GOMP_SPINCOUNT", EnvKind::kText, kForeign,
                         "how long GNU OpenMP threads spin; set, txl leaves OMP_WAIT_POLICY "
                         "alone")),
      // POSIX and XDG.
      value("XDG_CACHE_HOME", EnvKind::kText, kForeign,
            "the user's cache folder: the token cache's default is in it"),
      value("HOME", EnvKind::kText, kForeign,
            "the user's home: ~/.cache/txl when XDG_CACHE_HOME is unset"),
      value("PATH", EnvKind::kText, kForeign, "where txl looks for gnuplot"),
  };
}

}  // namespace

const std::vector<EnvVariable>& env_variables() {
  static const std::vector<EnvVariable> table = [] {
    std::vector<EnvVariable> all = txl_variables();
    for (auto& v : foreign_variables()) all.push_back(v);
    return all;
  }();
  return table;
}

namespace {

const EnvVariable* find_variable(const std::string& name) {
  for (const auto& v : env_variables())
    if (name == v.name) return &v;
  return nullptr;
}

}  // namespace

const EnvVariable& env_variable(const std::string& name) {
  if (const EnvVariable* v = find_variable(name)) return *v;
  throw std::logic_error("environment variable " + name +
                         " is read but not declared in env_variables() (util/env_variables.cpp)");
}

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
