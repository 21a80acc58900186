// A run directory describes itself; eval, compare and sample rebuild everything from it:
//   config.json     the resolved configuration (every key)
//   vocab.json      the vocabulary built from the training split
//   checkpoint.pt   the last checkpoint        best.pt   the best by validation perplexity
//   metrics.jsonl   one JSON object per log interval and per validation
//   origin.json     only in a run made by txl import (where its weights came from) or by
//                   txl train --init-from (the run it started from: train/init_from.h)
#pragma once

#include <string>
#include <vector>

#include "txl/config/config.h"
#include "txl/data/vocab.h"
#include "txl/model/transformer.h"
#include "txl/run/checkpoint.h"

namespace txl {

struct RunPaths {
  std::string dir;
  std::string config() const { return dir + "/config.json"; }
  std::string vocab() const { return dir + "/vocab.json"; }
  std::string last_checkpoint() const { return dir + "/checkpoint.pt"; }
  std::string best_checkpoint() const { return dir + "/best.pt"; }
  std::string metrics() const { return dir + "/metrics.jsonl"; }
  std::string eval_cache() const { return dir + "/eval-cache"; }  // eval/cache.h
  std::string origin() const { return dir + "/origin.json"; }     // imported or fine-tuned
};

// The files a run writes (names inside the run directory), the ones --force replaces.
const std::vector<std::string>& run_file_names();

// Whether `dir` holds any of run_file_names() (of any kind): a run directory, finished or not.
bool holds_run_files(const std::string& dir);

// Every run file of `dir` that exists is a regular file (after following links): a
// directory, FIFO, socket or device in its place throws InputError naming it, before anything
// reads or writes it (reading a FIFO would block forever).
void check_run_files(const std::string& dir);

// runs/<config file stem>-<YYYYmmdd-HHMMSS>
std::string default_run_dir(const std::string& config_path);

// A folder txl is to make (a run directory, a study folder) given by `option`: InputError
// naming the option, the path and the part of it in the way when a part that exists is not
// a folder (`--out FILE/sub`), or the nearest existing folder does not let this user make
// one in it. Changes nothing.
void check_folder_can_be_made(const std::string& dir, const std::string& option);

// Refuses (InputError) a path that is not a directory or cannot be made
// (check_folder_can_be_made), and an existing non-empty directory unless `force`; changes
// nothing, so it can run before the other checks of a new run.
void check_run_dir(const std::string& dir, bool force);

// check_run_dir, then creates the directory and its parents. With `force`, the files of an
// earlier run (run_file_names() and their temporaries) are removed so nothing of it can mix
// with the new run; other files are left alone.
void prepare_run_dir(const std::string& dir, bool force);

// Removes temporaries that write_file_atomic leaves when a process dies mid-write
// (e.g. "checkpoint.pt.tmp.1234"). Only call while holding the run's RunLock.
void remove_stale_temporaries(const std::string& dir);

// Removes the run files and, when it is then empty and not `keep_dir`, the directory: undoes
// a run that failed before it wrote its first checkpoint (keep_dir: the directory was there
// before the run).
void remove_run(const std::string& dir, bool keep_dir = false);

// An exclusive advisory lock (flock) on the run directory, held while a process trains in it,
// so a second `txl train` (or `--resume`, or a `txl import` into it) on the same directory is
// refused instead of both writing the same files. The kernel drops it when the process dies, even
// by kill -9.
class RunLock {
 public:
  explicit RunLock(const std::string& dir);  // InputError when another process holds it
  ~RunLock();
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;

 private:
  int fd_ = -1;
};

// "imported from FILE (XXH64 H, N names)" for a run made by txl import (its origin.json),
// "fine-tuned from RUN (best.pt step S, XXH64 H; imported from FILE (...))" for one started by
// txl train --init-from (the source's own origin after the semicolon, when it has one), else "".
std::string describe_origin(const RunPaths& paths);

// The run's name for tables: the directory's last component.
std::string run_name(const std::string& dir);

struct LoadedRun {
  RunPaths paths;
  Config config;
  Vocab vocab;
  TransformerLM model{nullptr};
  TrainState state;
};

// which: "best" (falls back to the last checkpoint when no best exists) or "last".
// A missing directory, config, vocabulary or checkpoint, a damaged checkpoint, or one whose
// model configuration or vocabulary differs from config.json / vocab.json, throws InputError
// naming the file. The model is on `device` (platform/device.h resolves a name).
LoadedRun load_run(const std::string& dir, const std::string& which = "best",
                   const torch::Device& device = torch::kCPU);

// The checkpoint file load_run(dir, which) reads: best.pt, or checkpoint.pt for "last" or
// when no best.pt exists. `which` is a checkpoint choice name (config.h): best or last.
std::string checkpoint_file(const RunPaths& paths, const std::string& which);

}  // namespace txl
