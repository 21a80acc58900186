// metrics.jsonl of a run: one JSON object per line (training intervals, validations,
// skipped steps), appended as training goes, cut back to a checkpoint's step on resume.
#pragma once

#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace txl {

class MetricsLog {
 public:
  explicit MetricsLog(const std::string& path);
  // Appends and flushes one line; a failed write (disk full) throws.
  void write(const nlohmann::json& j);

 private:
  std::string path_;
  std::ofstream out_;
};

// Keeps only the metrics lines up to `step`: a run killed after logging step s but before its
// next checkpoint (at c < s) would otherwise log steps c+1..s twice once resumed from c. A
// line cut short by the kill is dropped too.
void truncate_metrics(const std::string& path, int64_t step);

}  // namespace txl
