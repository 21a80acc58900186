#include "txl/train/metrics_log.h"

#include <stdexcept>

#include "txl/util/fs.h"

namespace txl {

MetricsLog::MetricsLog(const std::string& path) : path_(path), out_(path, std::ios::app) {
  if (!out_) throw std::runtime_error("cannot open " + path + " for writing");
}

void MetricsLog::write(const nlohmann::json& j) {
  out_ << j.dump() << '\n' << std::flush;
  // A full disk must stop the run loudly, not lose the metrics silently.
  if (!out_) throw std::runtime_error("cannot write " + path_ + " (disk full?)");
}

void truncate_metrics(const std::string& path, int64_t step) {
  if (!is_regular_file(path)) return;
  std::ifstream in(path, std::ios::binary);
  std::string line, kept;
  bool dropped = false;
  while (std::getline(in, line)) {
    bool keep = false;
    try {
      const auto j = nlohmann::json::parse(line);
      keep = j.is_object() && j.contains("step") && j.at("step").is_number_integer() &&
             j.at("step").get<int64_t>() <= step;
    } catch (const std::exception&) {
      keep = false;
    }
    if (keep) {
      kept += line + "\n";
    } else {
      dropped = true;
    }
  }
  if (dropped) write_file_atomic(path, kept);
}

}  // namespace txl
