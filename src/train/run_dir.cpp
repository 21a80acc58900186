#include "txl/train/run_dir.h"

#include <ctime>
#include <filesystem>

#include "txl/util/error.h"
#include "txl/util/fs.h"

namespace txl {

namespace fs = std::filesystem;

std::string default_run_dir(const std::string& config_path) {
  const std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", std::localtime(&now));
  return "runs/" + fs::path(config_path).stem().string() + "-" + stamp;
}

void prepare_run_dir(const std::string& dir, bool force) {
  std::error_code ec;
  if (fs::exists(dir, ec)) {
    if (!fs::is_directory(dir, ec)) throw InputError("--run-dir " + dir + " exists and is not a directory");
    if (!fs::is_empty(dir, ec) && !force) {
      throw InputError("--run-dir " + dir + " already holds a run; use --resume " + dir +
                       " to continue it, --force to overwrite it, or another --run-dir");
    }
  }
  fs::create_directories(dir, ec);
  if (ec) throw InputError("cannot create run directory " + dir + ": " + ec.message());
}

std::string run_name(const std::string& dir) {
  auto p = fs::path(dir);
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}

LoadedRun load_run(const std::string& dir, const std::string& which) {
  LoadedRun run;
  run.paths.dir = dir;
  if (!is_directory(dir)) throw InputError("run directory " + dir + " does not exist");
  for (const auto& f : {run.paths.config(), run.paths.vocab()}) {
    if (!is_regular_file(f)) throw InputError(f + " is missing: " + dir + " is not a complete txl run directory");
  }
  run.config = config_from_json(read_json_file(run.paths.config()), run.paths.config());
  run.vocab = Vocab::load(run.paths.vocab());
  std::string ckpt = which == "last" ? run.paths.last_checkpoint() : run.paths.best_checkpoint();
  if (which != "last" && !is_regular_file(ckpt)) ckpt = run.paths.last_checkpoint();
  if (!is_regular_file(ckpt)) throw InputError(ckpt + " is missing: " + dir + " has no checkpoint yet");
  run.model = TransformerLM(run.config.model, run.vocab.size());
  auto loaded = load_checkpoint(ckpt, run.model, nullptr);
  run.state = loaded.state;
  if (run.state.vocab_checksum != run.vocab.checksum()) {
    throw InputError(ckpt + " was trained with a different vocabulary than " + run.paths.vocab());
  }
  run.model->eval();
  return run;
}

}  // namespace txl
