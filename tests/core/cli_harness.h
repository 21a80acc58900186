// The one harness for end-to-end tests of the `txl` executable (TXL_BINARY): running it with
// arguments and environment (stdout and stderr apart and together), temporary and per-test
// scratch folders, tiny corpora, configs and trained runs, and reading metrics.jsonl back.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "txl/config/encodings.h"

namespace txl::testing {

namespace cli_fs = std::filesystem;

// The folders fresh_dir made; removed when the whole test program passes, kept for
// inspection when a test failed.
class FreshDirCleanup : public ::testing::Environment {
 public:
  static std::vector<std::string>& dirs() {
    static std::vector<std::string> made;
    return made;
  }
  void TearDown() override {
    if (::testing::UnitTest::GetInstance()->Failed()) return;
    std::error_code ec;
    for (const auto& dir : dirs()) cli_fs::remove_all(dir, ec);
  }
};
inline ::testing::Environment* const kFreshDirCleanup =
    ::testing::AddGlobalTestEnvironment(new FreshDirCleanup);

// A fresh, empty folder under the test temp dir (removed first if a previous run left it).
inline std::string fresh_dir(const std::string& name) {
  const std::string dir =
      ::testing::TempDir() + "/txl_cli_" + std::to_string(::getpid()) + "_" + name;
  cli_fs::remove_all(dir);
  cli_fs::create_directories(dir);
  FreshDirCleanup::dirs().push_back(dir);
  return dir;
}

// Writes `text` to `path`, making its folder first.
inline void write_text(const std::string& path, const std::string& text) {
  const auto parent = cli_fs::path(path).parent_path();
  if (!parent.empty()) cli_fs::create_directories(parent);
  std::ofstream out(path, std::ios::binary);
  out << text;
  ASSERT_TRUE(out.good()) << path;
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A small English-like character corpus: a few hundred characters of training text, so
// that the tests' 40-step runs wrap around the training streams more than once.
inline std::string write_tiny_corpus(const std::string& dir) {
  cli_fs::create_directories(dir);
  const std::string line = "the quick brown fox jumps over the lazy dog. ";
  std::string train;
  for (int i = 0; i < 7; ++i) train += line + (i % 2 ? "a cat sat.\n" : "birds sing at dawn.\n");
  write_text(dir + "/train.txt", train);
  write_text(dir + "/valid.txt", "the lazy cat jumps over the quick dog.\nbirds sat at dawn.\n");
  write_text(dir + "/test.txt", "a quick brown dog sings at dawn.\n");
  return dir;
}

// 1 layer, d_model 16, tgt_len 8, batch 2, relative encoding with memory, dropout on (so the
// random stream matters), one thread (bit-for-bit repeatable), log every step.
inline nlohmann::json tiny_config(const std::string& corpus_dir) {
  nlohmann::json j = nlohmann::json::parse(R"({
    "model": {"pos_encoding": "relative", "n_layer": 1, "d_model": 16, "n_head": 2, "d_head": 8,
              "d_inner": 32, "dropout": 0.1, "dropatt": 0.1},
    "train": {"tgt_len": 8, "mem_len": 8, "batch_size": 2, "max_steps": 40, "lr": 0.003,
              "warmup_steps": 5, "min_lr_ratio": 0.1, "log_interval": 1, "eval_interval": 10,
              "threads": 1, "seed": 7},
    "eval": {"lengths": [8], "batch_tokens": 64}
  })");
  j["data"] = {{"dir", corpus_dir}};
  return j;
}

inline std::string write_config(const std::string& path, const nlohmann::json& config) {
  write_text(path, config.dump(2));
  return path;
}

// The result of one run: the exit status (128 + signal when killed by one), stdout and
// stderr kept apart, and both together (stdout first) for messages and searches.
struct CliResult {
  int code = -1;
  std::string out;
  std::string err;
  std::string output;  // out + err
};

// Starts TXL_BINARY with `args`; `env` holds "NAME=value" entries that are added to (or
// replace) this process's environment. stdout goes to `output_path`, stderr too unless
// `error_path` names another file. Returns the child's pid.
inline pid_t spawn_txl(const std::vector<std::string>& args, const std::string& output_path,
                       const std::vector<std::string>& env = {},
                       const std::string& error_path = "") {
  // Everything the child needs is built before fork: after it only async-signal-safe calls.
  const auto overridden = [&env](const std::string& entry) {
    const auto name = entry.substr(0, entry.find('=') + 1);
    for (const auto& e : env) {
      if (e.rfind(name, 0) == 0) return true;
    }
    return false;
  };
  std::vector<std::string> env_strings;
  bool wait_policy = false;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    if (entry.rfind("TXL_INJECT_", 0) == 0) continue;  // hooks only when a test asks for them
    if (overridden(entry)) continue;
    wait_policy = wait_policy || entry.rfind("OMP_WAIT_POLICY=", 0) == 0;
    env_strings.push_back(entry);
  }
  // txl re-executes itself to set this (ensure_fast_blas); setting it here halves the start-up
  // time that dominates these tests.
  if (!wait_policy) env_strings.push_back("OMP_WAIT_POLICY=PASSIVE");
  for (const auto& e : env) env_strings.push_back(e);
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string binary = TXL_BINARY;
  std::vector<std::string> arg_strings = args;
  std::vector<char*> argv = {binary.data()};
  for (auto& a : arg_strings) argv.push_back(a.data());
  argv.push_back(nullptr);

  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) ::_exit(127);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::close(fd);
    if (!error_path.empty()) {
      const int efd = ::open(error_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (efd < 0) ::_exit(127);
      ::dup2(efd, 2);
      ::close(efd);
    }
    ::execve(binary.c_str(), argv.data(), envp.data());
    ::_exit(127);
  }
  return pid;
}

// Waits for the child; kills it (and fails) after `timeout_s`.
inline int wait_txl(pid_t pid, double timeout_s = 60.0) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  int status = 0;
  while (true) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      ADD_FAILURE() << "txl did not finish within " << timeout_s << " s";
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// Runs TXL_BINARY with `args` (no shell) and waits up to 300 s; `env` holds "NAME=value"
// entries added to, or replacing, this process's environment (spawn_txl).
inline CliResult run_txl(const std::vector<std::string>& args,
                         const std::vector<std::string>& env = {}) {
  static int counter = 0;
  const std::string base = ::testing::TempDir() + "/txl_cli_" + std::to_string(::getpid()) + "_" +
                           std::to_string(counter++);
  CliResult r;
  r.code = wait_txl(spawn_txl(args, base + ".out", env, base + ".err"), 300.0);
  r.out = read_text(base + ".out");
  r.err = read_text(base + ".err");
  r.output = r.out + r.err;
  cli_fs::remove(base + ".out");
  cli_fs::remove(base + ".err");
  return r;
}

inline std::vector<nlohmann::json> read_metrics(const std::string& run_dir) {
  std::vector<nlohmann::json> lines;
  std::ifstream in(run_dir + "/metrics.jsonl");
  std::string line;
  while (std::getline(in, line)) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

// step -> training loss, from the progress lines of metrics.jsonl. A step logged twice is a
// failure: a resumed run must not repeat steps.
inline std::map<int64_t, double> read_losses(const std::string& run_dir) {
  std::map<int64_t, double> losses;
  for (const auto& j : read_metrics(run_dir)) {
    if (!j.contains("loss")) continue;
    const int64_t step = j.at("step").get<int64_t>();
    EXPECT_EQ(losses.count(step), 0u) << "step " << step << " logged twice in " << run_dir;
    losses[step] = j.at("loss").is_null() ? std::nan("") : j.at("loss").get<double>();
  }
  return losses;
}

// Counts lines of `path` that contain `needle` (progress lines in a growing log).
inline int count_lines_with(const std::string& path, const std::string& needle) {
  std::ifstream in(path);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) n += line.find(needle) != std::string::npos;
  return n;
}

// Per-test scratch folders: TempDir()/txl_<suite>_<test>_<pid>/<name>, removed by
// cleanup_scratch() when the test passed (a failed test keeps its files to inspect).
// This test's scratch root: TempDir()/txl_<suite>_<test>_<pid>.
inline cli_fs::path scratch_root() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string tag = std::string(info->test_suite_name()) + "_" + info->name();
  for (auto& c : tag) {
    if (c == '/') c = '_';
  }
  return cli_fs::path(::testing::TempDir()) / ("txl_" + tag + "_" + std::to_string(::getpid()));
}

// Removes the scratch root when the test passed; a failed test keeps its files to inspect.
inline void cleanup_scratch() {
  if (!::testing::Test::HasFailure()) cli_fs::remove_all(scratch_root());
}

// A fresh directory for this test (removed first if a previous run left it).
inline std::string scratch_dir(const std::string& name) {
  const auto dir = scratch_root() / name;
  cli_fs::remove_all(dir);
  cli_fs::create_directories(dir);
  return dir.string();
}

// Deterministic text over a small alphabet with structure a model can pick up.
inline std::string tiny_english(int sentences, int offset = 0) {
  static const char* words[] = {"the", "lord", "said", "unto", "him",
                                "and", "they", "went", "into", "land"};
  std::string text;
  uint32_t state = 12345u + static_cast<uint32_t>(offset);
  for (int s = 0; s < sentences; ++s) {
    const int n = 4 + s % 5;
    for (int w = 0; w < n; ++w) {
      state = state * 1103515245u + 12345u;
      text += words[(state >> 16) % 10];
      text += w + 1 < n ? " " : ".\n";
    }
  }
  return text;
}

// Writes train/valid/test splits into `dir`.
inline std::string write_corpus(const std::string& dir, const std::string& train,
                                const std::string& valid, const std::string& test) {
  write_text(dir + "/train.txt", train);
  write_text(dir + "/valid.txt", valid);
  write_text(dir + "/test.txt", test);
  return dir;
}

// The tests' usual corpus: 300 lines of tiny_english to train on, 40 each to validate and test.
inline std::string write_tiny_english_corpus(const std::string& dir) {
  return write_corpus(dir, tiny_english(300), tiny_english(40, 1), tiny_english(40, 2));
}

// Trains a tiny run with the real CLI; fails the test (and returns false) when it fails.
inline bool train_tiny_run(const std::string& corpus, const std::string& run_dir,
                           const std::string& encoding, const std::string& tokenizer = "char",
                           int steps = 3, const std::vector<std::string>& extra = {},
                           const std::vector<std::string>& env = {}) {
  // Encodings without memory (absolute, learned_absolute) refuse train.mem_len > 0, and those
  // without a distance table model.max_rel_dist.
  const EncodingTraits& traits = encoding_traits(parse_pos_encoding(encoding, "encoding"));
  const bool absolute = !traits.takes_memory;
  const std::string table = traits.uses_max_rel_dist ? ", \"max_rel_dist\": 64" : "";
  const std::string config = run_dir + ".config.json";
  write_text(config,
             std::string("{\"data\": {\"dir\": \"") + corpus + "\", \"tokenizer\": \"" + tokenizer +
                 "\"},"
                 " \"model\": {\"pos_encoding\": \"" +
                 encoding +
                 "\", \"n_layer\": 1, \"d_model\": 16, \"n_head\": 2,"
                 " \"d_head\": 8, \"d_inner\": 32, \"dropout\": 0.0" +
                 table +
                 "},"
                 " \"train\": {\"tgt_len\": 16, \"mem_len\": " +
                 (absolute ? "0" : "16") +
                 ", \"batch_size\": 4, \"max_steps\": " + std::to_string(steps) +
                 ", \"lr\": 0.003, \"warmup_steps\": 1, \"log_interval\": 1, \"eval_interval\": 0,"
                 " \"threads\": 1},"
                 " \"eval\": {\"lengths\": [8, 16, 32], \"split\": \"valid\"}}");
  std::vector<std::string> args = {"train", "--config", config, "--run-dir", run_dir};
  for (const auto& e : extra) args.push_back(e);
  const auto r = run_txl(args, env);
  EXPECT_EQ(r.code, 0) << "txl train failed:\n" << r.err;
  return r.code == 0;
}

}  // namespace txl::testing
