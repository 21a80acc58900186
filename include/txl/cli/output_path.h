// Files the commands write at paths the user gives (--json, --plot and the .svg beside it):
// checked before any work, so a long evaluation is never wasted on a path that cannot take
// its result, and again just before writing.
//
// Refused (InputError naming the option and the path; nothing is written or changed):
//  - a directory, FIFO, socket or character/block device, or a folder that does not exist;
//  - one of the files a run directory keeps (config.json, vocab.json, tokenizer.model,
//    checkpoint.pt, best.pt, metrics.jsonl, the eval-cache/ entries) or a study folder keeps
//    (study.json, results.json, report.md, cells/, logs/, plots/): an evaluation never changes
//    the run it reads. New files beside them (RUN/eval.json) are fine.
// A symbolic link is written through: its target is replaced and the link kept, and the
// target is what the rules above are applied to (a link to RUN/best.pt is refused).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace txl {

// Empty `path`: no output asked for, nothing to check.
void check_output_path(const std::string& path, const std::string& option);

// check_output_path again (the file system may have changed during the work), then
// write_file_atomic.
void write_output_file(const std::string& path, const std::string& option,
                       const std::string& content);

// A command's --json FILE at its end: `j` (two-space indent, a final newline) through
// write_output_file, then "wrote FILE" on stdout; an empty `path` writes nothing.
void write_json_output(const std::string& path, const nlohmann::json& j);

}  // namespace txl
