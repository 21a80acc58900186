// The probe tests' fixture: two tiny trained runs on one corpus (probe_cli_test.cpp,
// probe_shard_test.cpp), trained once per test process, and probe settings small enough that
// every probe runs in a moment.
#pragma once

#include <string>
#include <vector>

#include "cli_harness.h"

namespace txl::testing {

struct ProbeRuns {
  std::string dir, corpus, rel, abs;
};

// Two tiny char runs on one corpus; the text holds digits, the char passkey's keys.
inline const ProbeRuns& probe_runs() {
  static const ProbeRuns runs = [] {
    ProbeRuns t;
    t.dir = scratch_dir("probe_cli");
    std::string train = tiny_english(300), valid = tiny_english(60, 1);
    for (int i = 0; i < 40; ++i) train += " " + std::to_string(i * 37 % 1000);
    for (int i = 0; i < 10; ++i) valid += " " + std::to_string(i * 53 % 1000);
    t.corpus = write_corpus(t.dir + "/corpus", train, valid, tiny_english(30, 2));
    t.rel = t.dir + "/rel";
    t.abs = t.dir + "/abs";
    train_tiny_run(t.corpus, t.rel, "relative");
    train_tiny_run(t.corpus, t.abs, "absolute");
    return t;
  }();
  return runs;
}

// Small settings so that every probe runs in a moment.
inline std::vector<std::string> small_probes() {
  return {"--probes",    "recl,copy,passkey,attention",
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
