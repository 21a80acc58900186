#include "txl/run/run_dir.h"

#include <fcntl.h>
#include <spdlog/fmt/fmt.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "txl/run/checkpoint.h"
#include "txl/util/error.h"
#include "txl/util/fs.h"
#include "txl/util/json.h"

namespace txl {

namespace fs = std::filesystem;

namespace {

// "checkpoint.pt.tmp.1234": write_file_atomic's temporary for a run file.
bool is_run_temporary(const std::string& name) {
  for (const auto& file : run_file_names()) {
    const std::string prefix = file + ".tmp.";
    if (name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0 &&
        name.find_first_not_of("0123456789", prefix.size()) == std::string::npos) {
      return true;
    }
  }
  return false;
}

void remove_files(const std::string& dir, bool run_files) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    bool ours = is_run_temporary(name);
    if (run_files) {
      for (const auto& file : run_file_names()) ours = ours || name == file;
    }
    if (ours && !entry.is_directory()) fs::remove(entry.path(), ec);
  }
}

// " --nproc N" when the run's checkpoint was trained by N > 1 processes: its resume needs
// as many.
std::string resume_processes(const std::string& dir) {
  try {
    const int64_t world = read_checkpoint_state(RunPaths{dir}.last_checkpoint()).world_size;
    return world > 1 ? " --nproc " + std::to_string(world) : "";
  } catch (const InputError&) {
    return "";  // a damaged checkpoint: its resume says what is wrong with it
  }
}

}  // namespace

const std::vector<std::string>& run_file_names() {
  static const std::vector<std::string> names = {"config.json",   "vocab.json", kSubwordModelFile,
                                                 "checkpoint.pt", "best.pt",    "metrics.jsonl",
                                                 "origin.json"};
  return names;
}

bool holds_run_files(const std::string& dir) {
  for (const auto& name : run_file_names()) {
    if (file_kind(dir + "/" + name) != FileKind::kMissing) return true;
  }
  return false;
}

void check_run_files(const std::string& dir) {
  for (const auto& name : run_file_names()) {
    const std::string path = dir + "/" + name;
    const FileKind kind = file_kind(path);
    if (kind != FileKind::kMissing && kind != FileKind::kRegular) {
      throw InputError(path + " is " + describe(kind) + ", expected the run's " + name +
                       " file: move it out of the run directory " + dir);
    }
  }
}

std::string default_run_dir(const std::string& config_path) {
  const std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", std::localtime(&now));
  return "runs/" + fs::path(config_path).stem().string() + "-" + stamp;
}

void check_folder_can_be_made(const std::string& dir, const std::string& option) {
  std::error_code link_ec;
  if (fs::is_symlink(fs::symlink_status(dir, link_ec)) && file_kind(dir) == FileKind::kMissing) {
    throw InputError(option + " " + dir + " is a symbolic link to " + link_target(dir) +
                     ", which does not exist; make that folder first, or give another path");
  }
  // From the folder itself up to the nearest part of the path that exists.
  for (fs::path at = dir; true; at = at.parent_path()) {
    const fs::path shown = at.empty() ? fs::path(".") : at;
    std::error_code ec;
    const fs::file_status status = fs::status(shown, ec);  // follows symbolic links
    if (status.type() == fs::file_type::not_found) {
      if (at.empty() || at == at.parent_path()) return;  // nothing of it exists: not ours to judge
      continue;
    }
    if (ec) {
      throw InputError(option + " " + dir + ": cannot read " + shown.string() + " (" +
                       ec.message() + ")");
    }
    if (status.type() != fs::file_type::directory) {
      throw InputError(option + " " + dir + ": " + shown.string() +
                       (shown == fs::path(dir) ? " exists and is not a folder"
                                               : " is not a folder, so nothing can be made in it") +
                       "; give a folder path");
    }
    if (shown != fs::path(dir) && ::access(shown.c_str(), W_OK | X_OK) != 0) {
      throw InputError(option + " " + dir + ": cannot make a folder in " + shown.string() + " (" +
                       std::strerror(errno) + ")");
    }
    return;
  }
}

void check_run_dir(const std::string& dir, bool force) {
  check_folder_can_be_made(dir, "--run-dir");
  std::error_code ec;
  const FileKind kind = file_kind(dir);
  if (kind == FileKind::kMissing) return;
  if (kind != FileKind::kDirectory)
    throw InputError("--run-dir " + dir + " is " + describe(kind) + ", expected a directory");
  // --force replaces the run's files; one that is not a file (a directory in its place) it
  // could neither remove nor write over.
  if (force) check_run_files(dir);
  if (!force && !fs::is_empty(dir, ec)) {
    const bool resumable = is_regular_file(RunPaths{dir}.last_checkpoint());
    throw InputError("--run-dir " + dir +
                     (resumable
                          ? " already holds a run; use --resume " + dir + resume_processes(dir) +
                                " to continue it, --force to overwrite it, or another --run-dir"
                          : " is not empty (it holds no checkpoint to resume); use --force to "
                            "overwrite it, or another --run-dir"));
  }
}

void prepare_run_dir(const std::string& dir, bool force) {
  check_run_dir(dir, force);
  std::error_code ec;
  if (force && fs::is_directory(dir, ec)) remove_files(dir, /*run_files=*/true);
  fs::create_directories(dir, ec);
  if (ec) throw InputError("cannot create run directory " + dir + ": " + ec.message());
}

void remove_stale_temporaries(const std::string& dir) { remove_files(dir, /*run_files=*/false); }

void remove_run(const std::string& dir, bool keep_dir) {
  remove_files(dir, /*run_files=*/true);
  std::error_code ec;
  if (!keep_dir && fs::is_empty(dir, ec) && !ec) fs::remove(dir, ec);
}

RunLock::RunLock(const std::string& dir) {
  fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0) throw InputError("cannot open run directory " + dir + ": " + std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    if (err == EWOULDBLOCK) {
      throw InputError("run directory " + dir +
                       " is in use by another txl train or import process; "
                       "wait for it to finish or stop it first");
    }
    throw InputError("cannot lock run directory " + dir + ": " + std::strerror(err));
  }
}

RunLock::~RunLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the flock
}

std::string run_name(const std::string& dir) {
  auto p = fs::path(dir);
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}

std::string checkpoint_file(const RunPaths& paths, const std::string& which) {
  const bool best = parse_checkpoint_choice(which, "checkpoint") == CheckpointChoice::kBest;
  // A best.pt that is there but not a file is named as such (check_run_files), not skipped.
  if (best && file_kind(paths.best_checkpoint()) != FileKind::kMissing)
    return paths.best_checkpoint();
  return paths.last_checkpoint();
}

namespace {

// The lengths the checkpoint was trained at are what evaluation reports as the training length
// and what it derives defaults from: config.json must say the same (an edited config, or a
// checkpoint copied in from another run, is refused naming both).
void check_training_lengths(const LoadedRun& run, const std::string& ckpt) {
  const auto& saved = run.state.config;
  if (!saved.is_object() || !saved.contains("train") || !saved["train"].is_object()) return;
  const auto& train = saved["train"];
  const std::pair<const char*, int64_t> keys[] = {{"tgt_len", run.config.train.tgt_len},
                                                  {"mem_len", run.config.train.mem_len}};
  for (const auto& [key, value] : keys) {
    if (!train.contains(key) || !train[key].is_number_integer()) continue;
    const int64_t trained = train[key].get<int64_t>();
    if (trained == value) continue;
    throw InputError(
        fmt::format("{} was trained with train.{} {} but {} says {}: the checkpoint "
                    "does not belong to this config (restore the config, or the "
                    "run's own checkpoint)",
                    ckpt, key, trained, run.paths.config(), value));
  }
}

}  // namespace

namespace {

// One origin.json as a phrase: where txl import read the weights, or which run's checkpoint
// txl train --init-from started from, followed by that run's own origin.
std::string describe_origin_json(const nlohmann::json& j, int depth) {
  if (!j.contains("init_from")) {
    return fmt::format("imported from {} (XXH64 {}, {} names)",
                       j.at("imported_from").get<std::string>(), j.at("xxh64").get<std::string>(),
                       j.at("names").get<std::string>());
  }
  std::string out =
      fmt::format("fine-tuned from {} ({} step {}, XXH64 {}", j.at("init_from").get<std::string>(),
                  j.at("checkpoint").get<std::string>(), j.at("step").get<int64_t>(),
                  j.at("xxh64").get<std::string>());
  // A chain of fine-tunings is as deep as the runs made one from another; 16 is plenty.
  if (j.contains("origin") && j.at("origin").is_object() && depth < 16)
    out += "; " + describe_origin_json(j.at("origin"), depth + 1);
  return out + ")";
}

}  // namespace

std::string describe_origin(const RunPaths& paths) {
  if (file_kind(paths.origin()) == FileKind::kMissing) return "";
  try {
    return describe_origin_json(read_json_file(paths.origin()), 0);
  } catch (const std::exception& e) {
    return "origin unknown (" + paths.origin() + " unreadable: " + e.what() + ")";
  }
}

LoadedRun load_run(const std::string& dir, const std::string& which, const torch::Device& device) {
  LoadedRun run;
  run.paths.dir = dir;
  const FileKind kind = file_kind(dir);
  if (kind == FileKind::kMissing) throw InputError("run directory " + dir + " does not exist");
  if (kind != FileKind::kDirectory) {
    throw InputError("run directory " + dir + " is " + describe(kind) +
                     ", expected a directory written by txl train");
  }
  for (const auto& f : {run.paths.config(), run.paths.vocab()}) {
    check_not_special(f, "a file of the run");
    if (!is_regular_file(f))
      throw InputError(f + " is missing: " + dir + " is not a complete txl run directory");
  }
  run.config = config_from_json(read_json_file(run.paths.config()), run.paths.config());
  run.vocab = Vocab::load(run.paths.vocab());
  const std::string ckpt = checkpoint_file(run.paths, which);
  check_not_special(ckpt, "a checkpoint file");
  if (!is_regular_file(ckpt))
    throw InputError(ckpt + " is missing: " + dir + " has no checkpoint yet");
  // On the device first: the checkpoint's tensors then load straight onto it.
  run.model = make_model(run.config.model, run.vocab.size(), device);
  // load_checkpoint compares the checkpoint's model configuration with config.json's.
  auto loaded = load_checkpoint(ckpt, run.model, nullptr);
  run.state = loaded.state;
  if (run.state.vocab_checksum != run.vocab.checksum()) {
    throw InputError(ckpt + " was trained with a different vocabulary than " + run.paths.vocab());
  }
  check_training_lengths(run, ckpt);
  run.model->eval();
  return run;
}

}  // namespace txl
