// metrics.jsonl read back (run_metrics.h): each line checked for its shape, then filed as
// progress, validation or probe points, a repeated step starting the run again there.
#include "txl/eval/run_metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "txl/util/error.h"
#include "txl/util/fs.h"
#include "txl/util/json.h"

namespace txl {

namespace {

using nlohmann::json;

// A line of the wrong shape; the reader adds the file and line number.
struct BadLine {
  std::string why;
};

int64_t integer_key(const json& j, const char* key) {
  if (!j.contains(key)) throw BadLine{std::string("no \"") + key + "\""};
  const json& v = j.at(key);
  if (!v.is_number_integer()) {
    throw BadLine{std::string("\"") + key + "\" must be an integer, got " + shown(v)};
  }
  return v.get<int64_t>();
}

// A number, or NaN for null (NaN and infinities are written as null).
double number_or_null(const json& j, const char* key) {
  const json& v = j.at(key);
  if (v.is_null()) return std::numeric_limits<double>::quiet_NaN();
  if (!v.is_number()) {
    throw BadLine{std::string("\"") + key + "\" must be a number or null, got " + shown(v)};
  }
  return v.get<double>();
}

std::vector<ProbePoint> probe_points(const json& j, int64_t step) {
  if (!j.at("probe").is_string()) throw BadLine{"\"probe\" must be a string"};
  if (!j.contains("metrics") || !j.at("metrics").is_array()) {
    throw BadLine{"a probe line needs \"metrics\": [{\"series\", \"x\", \"value\"}, ...]"};
  }
  std::vector<ProbePoint> out;
  for (const json& m : j.at("metrics")) {
    if (!m.is_object() || !m.contains("series") || !m.at("series").is_string() ||
        !m.contains("value") || !m.at("value").is_number()) {
      throw BadLine{
          "each of \"metrics\" must be {\"series\": string, \"x\": number or null, "
          "\"value\": number}, got " +
          shown(m)};
    }
    ProbePoint p{
        j.at("probe").get<std::string>(), step, m.at("series").get<std::string>(), std::nullopt, "",
        m.at("value").get<double>()};
    if (m.contains("x") && !m.at("x").is_null()) {
      if (!m.at("x").is_number()) throw BadLine{"\"x\" must be a number or null"};
      p.x = m.at("x").get<double>();
    }
    if (m.contains("x_name") && m.at("x_name").is_string())
      p.x_name = m.at("x_name").get<std::string>();
    out.push_back(p);
  }
  return out;
}

// What has been read so far, with the last step of each kind of line.
class MetricsBuilder {
 public:
  explicit MetricsBuilder(RunMetrics& out) : out_(out) {}

  void add(const json& j) {
    if (!j.is_object()) throw BadLine{"expected a JSON object, got " + shown(j)};
    const int64_t step = integer_key(j, "step");
    if (j.contains("probe")) {
      auto points = probe_points(j, step);
      restart_if_repeated("probe " + j.at("probe").get<std::string>(), step);
      out_.probes.insert(out_.probes.end(), points.begin(), points.end());
    } else if (j.contains("valid_ppl")) {
      const double ppl = number_or_null(j, "valid_ppl");
      restart_if_repeated("valid", step);
      if (std::isfinite(ppl)) out_.validations.push_back({step, ppl});
    } else if (j.contains("loss")) {
      ProgressPoint p{step, number_or_null(j, "loss"), -1};
      if (j.contains("tokens_seen")) p.tokens_seen = integer_key(j, "tokens_seen");
      restart_if_repeated("progress", step);
      out_.progress.push_back(p);
    }
  }

 private:
  // A step at or below the last of its kind: the run started again there (a resume).
  void restart_if_repeated(const std::string& kind, int64_t step) {
    const auto last = last_step_.find(kind);
    if (last != last_step_.end() && step <= last->second) {
      const auto later = [step](const auto& p) { return p.step >= step; };
      erase_if(out_.progress, later);
      erase_if(out_.validations, later);
      erase_if(out_.probes, later);
      recount_last_steps();
    }
    last_step_[kind] = step;
  }

  // Each kind's last step among the points kept.
  void recount_last_steps() {
    last_step_.clear();
    const auto note = [this](const std::string& kind, int64_t step) {
      auto& last = last_step_.try_emplace(kind, step).first->second;
      last = std::max(last, step);
    };
    for (const auto& p : out_.progress) note("progress", p.step);
    for (const auto& p : out_.validations) note("valid", p.step);
    for (const auto& p : out_.probes) note("probe " + p.probe, p.step);
  }

  template <typename V, typename P>
  static void erase_if(V& v, P pred) {
    v.erase(std::remove_if(v.begin(), v.end(), pred), v.end());
  }

  RunMetrics& out_;
  std::map<std::string, int64_t> last_step_;
};

}  // namespace

RunMetrics read_run_metrics(const std::string& path, MetricsReading mode, std::string* warning) {
  const bool strict = mode == MetricsReading::kStrict;
  if (warning) warning->clear();
  RunMetrics out;
  out.path = path;
  if (!strict && !is_regular_file(path)) return out;
  const std::string text = read_regular_file(path, "a metrics.jsonl file (txl train writes it)");
  MetricsBuilder builder(out);
  size_t begin = 0;
  for (int64_t number = 1; begin < text.size(); ++number) {
    size_t end = text.find('\n', begin);
    const bool unterminated = end == std::string::npos;
    if (unterminated) end = text.size();
    const std::string line = text.substr(begin, end - begin);
    begin = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    ++out.lines;
    try {
      try {
        builder.add(json::parse(line));
      } catch (const json::exception& e) {
        throw BadLine{std::string("not JSON (") + e.what() + ")"};
      }
    } catch (const BadLine& bad) {
      if (!strict) continue;
      if (unterminated) {  // cut by a kill mid-write; the lines before it stand
        if (warning)
          *warning = path + ":" + std::to_string(number) + ": a cut-off last line, left out";
        continue;
      }
      throw InputError(path + ":" + std::to_string(number) + ": " + bad.why +
                       "; expected one JSON object per line as txl train writes it");
    }
  }
  return out;
}

std::optional<int64_t> tokens_at(const RunMetrics& metrics, int64_t step) {
  std::vector<const ProgressPoint*> known;
  for (const auto& p : metrics.progress) {
    if (p.tokens_seen >= 0) known.push_back(&p);
  }
  if (known.empty()) return std::nullopt;
  // The two progress lines around `step` (the first two, or the last two, beyond the ends).
  size_t hi = 0;
  while (hi < known.size() && known[hi]->step < step) ++hi;
  if (hi < known.size() && known[hi]->step == step) return known[hi]->tokens_seen;
  if (known.size() == 1) {
    const auto& p = *known.front();
    return p.step > 0 ? static_cast<int64_t>(std::llround(static_cast<double>(p.tokens_seen) *
                                                          step / static_cast<double>(p.step)))
                      : p.tokens_seen;
  }
  hi = std::clamp<size_t>(hi, 1, known.size() - 1);
  const ProgressPoint& a = *known[hi - 1];
  const ProgressPoint& b = *known[hi];
  const double rate =
      static_cast<double>(b.tokens_seen - a.tokens_seen) / static_cast<double>(b.step - a.step);
  return a.tokens_seen + static_cast<int64_t>(std::llround(rate * (step - a.step)));
}

}  // namespace txl
