// The CLI tests' shared tiny runs (compare, probe, probe shard and input-check tests): each
// distinct run (encoding, tokenizer, steps, extra train arguments) is trained by the real CLI
// once per test process, the first time a test asks for it, on one corpus, in a folder
// removed when the test program passes (kept to inspect when a test failed). ctest runs a
// suite per process (cmake/test_suites.cmake), so a suite trains each run it reads once.
//
// A shared run is read only: evaluating, comparing, probing and refusals that write nothing
// are fine (an evaluation adds to its eval-cache, which no test reads as its own). A test
// that trains into or resumes a run, proves a refusal left it unchanged, or asserts what its
// eval-cache holds takes a private copy (copy_run) instead.
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_harness.h"
#include "txl/probe/probe.h"
#include "txl/util/text.h"

namespace txl::testing {

// The shared corpus: tiny_english with digits in train and valid, the char passkey's keys.
inline const std::string& tiny_runs_corpus() {
  static const std::string corpus = [] {
    std::string train = tiny_english(300), valid = tiny_english(60, 1);
    for (int i = 0; i < 40; ++i) train += " " + std::to_string(i * 37 % 1000);
    for (int i = 0; i < 10; ++i) valid += " " + std::to_string(i * 53 % 1000);
    return write_corpus(fresh_dir("tiny_runs") + "/corpus", train, valid, tiny_english(30, 2));
  }();
  return corpus;
}

// The run train_tiny_run trains with these arguments on tiny_runs_corpus(), trained the first
// time it is asked for. Its folder is named for the encoding as the tests' tables show it
// (rel, abs, else the encoding's name; _TOKENIZER unless char); its config is beside it,
// RUN.config.json. A failed training fails the asking test and is tried again by the next.
inline std::string tiny_run(const std::string& encoding, const std::string& tokenizer = "char",
                            int steps = 3, const std::vector<std::string>& extra = {}) {
  static std::map<std::string, std::string> trained;  // key -> run folder
  static int folders = 0;                             // one folder per training tried
  const std::string key = nlohmann::json{
      {"encoding", encoding},
      {"tokenizer", tokenizer},
      {"steps", steps},
      {"extra", extra}}.dump();
  if (const auto it = trained.find(key); it != trained.end()) return it->second;
  const std::string name = encoding == "relative"   ? "rel"
                           : encoding == "absolute" ? "abs"
                                                    : encoding;
  const std::string root = cli_fs::path(tiny_runs_corpus()).parent_path().string();
  const std::string run = root + "/run" + std::to_string(folders++) + "/" + name +
                          (tokenizer == "char" ? "" : "_" + tokenizer);
  cli_fs::remove_all(run);
  if (train_tiny_run(tiny_runs_corpus(), run, encoding, tokenizer, steps, extra)) {
    trained[key] = run;
  }
  return run;
}

// A private copy of `run` at `to` (its parent made first) without its eval-cache (what other
// tests' evaluations added to the shared run), with its config beside it as RUN.config.json
// when `run` has one; returns `to`. The last part of `to` names the run in compare's tables.
inline std::string copy_run(const std::string& run, const std::string& to) {
  cli_fs::remove_all(to);
  cli_fs::create_directories(to);
  for (const auto& entry : cli_fs::directory_iterator(run)) {
    if (entry.path().filename() == "eval-cache") continue;
    cli_fs::copy(entry.path(), cli_fs::path(to) / entry.path().filename(),
                 cli_fs::copy_options::recursive);
  }
  if (cli_fs::exists(run + ".config.json")) {
    cli_fs::copy_file(run + ".config.json", to + ".config.json",
                      cli_fs::copy_options::overwrite_existing);
  }
  return to;
}

// The pair most tests read, a relative and an absolute char run of 3 steps differing only
// in the encoding, and this test's scratch folder `scratch` (scratch_dir) for its outputs.
struct TinyRuns {
  std::string dir, corpus, rel, abs;
};
inline TinyRuns shared_runs(const std::string& scratch) {
  return {scratch_dir(scratch), tiny_runs_corpus(), tiny_run("relative"), tiny_run("absolute")};
}
// The same pair copied into the scratch folder (as rel and abs), for a test that writes into
// them or asserts what their eval caches hold.
inline TinyRuns copied_runs(const std::string& scratch) {
  TinyRuns t = shared_runs(scratch);
  t.rel = copy_run(t.rel, t.dir + "/rel");
  t.abs = copy_run(t.abs, t.dir + "/abs");
  return t;
}

// Every registered probe, with settings small enough that each runs on a tiny run in a
// moment (a probe not named here runs at its defaults).
inline std::vector<std::string> small_probes() {
  return {"--probes",    join(probe_names(), ","),
          "--probe-set", "recl.first=4",
          "--probe-set", "recl.step=4",
          "--probe-set", "recl.last=16",
          "--probe-set", "recl.targets=20",
          "--probe-set", "copy.span=4",
          "--probe-set", "copy.distances=2,8",
          "--probe-set", "copy.count=6",
          "--probe-set", "passkey.lengths=32",
          "--probe-set", "passkey.trials=3",
          "--probe-set", "passkey.key_len=2",
          "--probe-set", "passkey.cue_len=3",
          "--probe-set", "attention.windows=2"};
}

}  // namespace txl::testing
