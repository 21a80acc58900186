// Helpers for end-to-end tests that run the real `txl` executable: a private scratch
// directory per test, tiny corpora and tiny trained runs (a few steps, ~1 s each). Processes
// are started by cli_harness.h; this keeps stdout and stderr apart and adds the tiny runs.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "cli_harness.h"
#include "txl/config/encodings.h"

namespace txl::cli_test {

namespace fs = std::filesystem;

// The result of one run: exit code, and stdout and stderr kept apart.
struct CliResult {
  int code = -1;
  std::string out;
  std::string err;
};

inline std::string slurp(const std::string& path) { return txl::testing::read_text(path); }

inline void write_text(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  txl::testing::write_text(path, text);
}

// This test's scratch root: TempDir()/txl_<suite>_<test>_<pid>.
inline fs::path scratch_root() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string tag = std::string(info->test_suite_name()) + "_" + info->name();
  for (auto& c : tag) {
    if (c == '/') c = '_';
  }
  return fs::path(::testing::TempDir()) / ("txl_" + tag + "_" + std::to_string(::getpid()));
}

// Removes the scratch root when the test passed; a failed test keeps its files to inspect.
inline void cleanup_scratch() {
  if (!::testing::Test::HasFailure()) fs::remove_all(scratch_root());
}

// A fresh directory for this test (removed first if a previous run left it).
inline std::string scratch_dir(const std::string& name) {
  const auto dir = scratch_root() / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

// Runs TXL_BINARY with `args` (no shell); `env` holds "NAME=value" entries added to, or
// replacing, this process's environment (txl::testing::spawn_txl).
inline CliResult run_txl(const std::vector<std::string>& args,
                         const std::vector<std::string>& env = {}) {
  static int counter = 0;
  const auto base = (fs::path(::testing::TempDir()) /
                     ("txl_cli_" + std::to_string(::getpid()) + "_" + std::to_string(counter++)))
                        .string();
  CliResult r;
  r.code = txl::testing::wait_txl(txl::testing::spawn_txl(args, base + ".out", env, base + ".err"),
                                  300.0);
  r.out = slurp(base + ".out");
  r.err = slurp(base + ".err");
  fs::remove(base + ".out");
  fs::remove(base + ".err");
  return r;
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

// Trains a tiny run with the real CLI; fails the test (and returns false) when it fails.
inline bool train_tiny_run(const std::string& corpus, const std::string& run_dir,
                           const std::string& encoding, const std::string& tokenizer = "char",
                           int steps = 3, const std::vector<std::string>& extra = {}) {
  // Encodings without memory (absolute, learned_absolute) refuse train.mem_len > 0.
  const bool absolute = !encoding_traits(parse_pos_encoding(encoding, "encoding")).takes_memory;
  const std::string config = run_dir + ".config.json";
  write_text(config,
             std::string("{\"data\": {\"dir\": \"") + corpus + "\", \"tokenizer\": \"" + tokenizer +
                 "\"},"
                 " \"model\": {\"pos_encoding\": \"" +
                 encoding +
                 "\", \"n_layer\": 1, \"d_model\": 16, \"n_head\": 2,"
                 " \"d_head\": 8, \"d_inner\": 32, \"dropout\": 0.0, \"max_rel_dist\": 64},"
                 " \"train\": {\"tgt_len\": 16, \"mem_len\": " +
                 (absolute ? "0" : "16") +
                 ", \"batch_size\": 4, \"max_steps\": " + std::to_string(steps) +
                 ", \"lr\": 0.003, \"warmup_steps\": 1, \"log_interval\": 1, \"eval_interval\": 0,"
                 " \"threads\": 1},"
                 " \"eval\": {\"lengths\": [8, 16, 32], \"split\": \"valid\"}}");
  std::vector<std::string> args = {"train", "--config", config, "--run-dir", run_dir};
  for (const auto& e : extra) args.push_back(e);
  const auto r = run_txl(args);
  EXPECT_EQ(r.code, 0) << "txl train failed:\n" << r.err;
  return r.code == 0;
}

}  // namespace txl::cli_test
