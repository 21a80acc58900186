#include "txl/cli/output_path.h"

#include <fcntl.h>
#include <spdlog/fmt/fmt.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "txl/run/run_dir.h"
#include "txl/study/study_cell.h"
#include "txl/util/error.h"
#include "txl/util/fs.h"

namespace txl {

namespace {

namespace fs = std::filesystem;

bool is_one_of(const std::string& name, const std::vector<std::string>& names) {
  for (const auto& n : names) {
    if (n == name) return true;
  }
  return false;
}

// Why `file` (a canonical folder + a name) belongs to a run directory or a study folder, or
// "" when it does not.
std::string owner_of(const fs::path& file) {
  const fs::path folder = file.parent_path();
  const std::string name = file.filename().string();
  if (is_one_of(name, run_file_names()) && holds_run_files(folder.string())) {
    return "is the " + name + " of the run directory " + folder.string();
  }
  if (file == fs::path(RunPaths{folder.string()}.eval_cache()) && holds_run_files(folder.string()))
    return "is the evaluation cache's folder of the run directory " + folder.string();
  const fs::path above = folder.parent_path();
  if (folder == fs::path(RunPaths{above.string()}.eval_cache()) &&
      holds_run_files(above.string())) {
    return "is in the evaluation cache of the run directory " + above.string();
  }
  const StudyPaths study{folder.string()};
  if (file_kind(study.manifest()) != FileKind::kMissing &&
      is_one_of(file.string(), {study.manifest(), study.results(), study.report()})) {
    return "is the " + name + " of the study folder " + folder.string();
  }
  const StudyPaths outer{above.string()};
  const std::vector<std::string> own_folders = {
      outer.plots(), fs::path(outer.cell_file("x")).parent_path().string(),
      fs::path(outer.log("x")).parent_path().string()};
  if (file_kind(outer.manifest()) != FileKind::kMissing &&
      is_one_of(folder.string(), own_folders)) {
    return "is in " + folder.filename().string() + "/ of the study folder " + above.string();
  }
  return "";
}

}  // namespace

void check_output_path(const std::string& path, const std::string& option) {
  if (path.empty()) return;
  std::string target;
  try {
    target = link_target(path);
  } catch (const InputError& e) {
    throw InputError(option + " " + e.what());
  }
  const std::string shown =
      option + " " + path + (target == path ? "" : " (a link to " + target + ")");
  const FileKind kind = file_kind(target);
  if (kind != FileKind::kMissing && kind != FileKind::kRegular) {
    throw InputError(shown + " is " + describe(kind) + "; expected a file path");
  }
  const fs::path parent = fs::path(target).parent_path();
  const std::string folder = parent.empty() ? "." : parent.string();
  if (!is_directory(folder)) {
    throw InputError(shown + ": directory " + folder + " does not exist");
  }
  // A file must be creatable there (write_file_atomic makes a temporary beside it): a
  // read-only folder, or /proc/self/fd when the path is /dev/stdout into a pipe, is refused
  // now, not after the work. Tried for real (permissions do not bind root): a probe file
  // made and removed at once.
  const std::string probe = folder + "/.txl-write-check." + std::to_string(getpid());
  const int fd = open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    throw InputError(shown + ": cannot create a file in " + folder + " (" + std::strerror(errno) +
                     ")");
  }
  close(fd);
  unlink(probe.c_str());
  std::error_code ec;
  const fs::path canonical = fs::canonical(folder, ec) / fs::path(target).filename();
  if (ec) throw InputError(shown + ": cannot resolve " + folder + ": " + ec.message());
  const std::string owner = owner_of(canonical);
  if (!owner.empty()) {
    throw InputError(shown + " " + owner + "; txl never writes over those, choose another path");
  }
}

void write_output_file(const std::string& path, const std::string& option,
                       const std::string& content) {
  check_output_path(path, option);
  write_file_atomic(path, content);
}

void write_json_output(const std::string& path, const nlohmann::json& j) {
  if (path.empty()) return;
  write_output_file(path, "--json", j.dump(2) + "\n");
  fmt::print("wrote {}\n", path);
}

}  // namespace txl
