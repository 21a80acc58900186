#include "txl/eval/compare.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>

#include "txl/data/tokenizers.h"
#include "txl/eval/report.h"

namespace txl {

namespace {

nlohmann::json maybe(bool valid, double value) {
  return valid ? nlohmann::json(value) : nlohmann::json();
}

// Pads or keeps `s` to `width` display columns, counting UTF-8 code points, not bytes.
std::string pad_left(const std::string& s, size_t width) {
  size_t cols = 0;
  for (unsigned char ch : s) cols += (ch & 0xC0) != 0x80;
  return cols >= width ? s : std::string(width - cols, ' ') + s;
}

std::string cell(const Comparison& c, const CompareRun& run, size_t i) {
  if (!run.evaluated(i)) return "n/a";
  const auto& e = run.results[i];
  const auto ci = mean_nll_interval(e, c.bootstrap);
  std::string s = fmt::format("{:.3f}", e.ppl());
  if (ci.valid) s += fmt::format(" [{:.3f},{:.3f}]", std::exp(ci.lo), std::exp(ci.hi));
  if (reports_bpc(c.tokenizer)) s += fmt::format(" {:.4f}", e.bpc());
  s += e.length == run.identity.train_length ? " *" : "  ";
  return s;
}

}  // namespace

bool has_paired(const Comparison& c) {
  return c.runs.size() == 2 && c.runs[0].supported && c.runs[1].supported;
}

PairedDifference paired_at(const Comparison& c, size_t i) {
  return paired_difference(c.runs[0].results.at(i), c.runs[1].results.at(i), c.bootstrap);
}

nlohmann::json comparison_to_json(const Comparison& c) {
  const bool chars = reports_bpc(c.tokenizer);
  nlohmann::json runs = nlohmann::json::array();
  for (const auto& run : c.runs) {
    nlohmann::json results = nlohmann::json::array();
    for (size_t i = 0; i < run.results.size(); ++i) {
      if (!run.evaluated(i)) {
        results.push_back({{"length", run.results[i].length}, {"skipped", run.skipped[i]}});
        continue;
      }
      auto row = summary_to_json(run.results[i], chars, c.bootstrap, c.bytes_per_token);
      row["cached"] = i < run.cached.size() && run.cached[i];
      if (c.per_position) row["per_position"] = per_position_to_json(run.results[i]);
      results.push_back(row);
    }
    nlohmann::json j = {
        {"name", run.name}, {"dir", run.dir}, {"supported", run.supported}, {"results", results}};
    add_run_identity(j, run.identity);
    runs.push_back(j);
  }
  nlohmann::json j = {{"corpus", c.corpus},
                      {"data_dir", c.data_dir},
                      {"split", c.split},
                      {"tokenizer", c.tokenizer},
                      {"bytes_per_token", c.bytes_per_token},
                      {"method", c.method},
                      {"precision", c.precision},
                      {"lengths", c.lengths},
                      {"interval", to_json(c.bootstrap)},
                      {"runs", runs}};
  if (has_paired(c)) {
    nlohmann::json rows = nlohmann::json::array();
    for (size_t i = 0; i < c.lengths.size(); ++i) {
      if (!c.runs[0].evaluated(i) || !c.runs[1].evaluated(i)) {
        rows.push_back({{"length", c.lengths[i]}, {"skipped", true}});
        continue;
      }
      const auto d = paired_at(c, i);
      rows.push_back({{"length", c.lengths[i]},
                      {"tokens", d.tokens},
                      {"windows", d.windows},
                      {"mean_nll_diff", d.mean_diff},
                      {"diff_lo", maybe(d.diff.valid, d.diff.lo)},
                      {"diff_hi", maybe(d.diff.valid, d.diff.hi)},
                      {"ppl_ratio", d.ppl_ratio()},
                      {"ratio_lo", maybe(d.diff.valid, std::exp(d.diff.lo))},
                      {"ratio_hi", maybe(d.diff.valid, std::exp(d.diff.hi))}});
    }
    j["paired"] = {{"a", c.runs[0].name}, {"b", c.runs[1].name}, {"rows", rows}};
  }
  return j;
}

namespace {

// The first run the method applies to, or null.
const CompareRun* first_supported(const Comparison& c) {
  for (const auto& run : c.runs) {
    if (run.supported) return &run;
  }
  return nullptr;
}

// The heading: corpus, method, and each run's encoding, training length and n/a lengths.
std::string comparison_heading(const Comparison& c) {
  const CompareRun* any = first_supported(c);
  std::string out =
      fmt::format("compare | corpus {} ({}) | {} split | method {}{}\n", c.corpus, c.data_dir,
                  c.split, c.method, c.precision == "fp32" ? "" : " | precision " + c.precision);
  // Settings that are the same for every run and differ per length (stride, memory).
  if (any && !any->results.empty()) out += "method " + describe_method(any->results.front()) + "\n";
  for (const auto& run : c.runs) {
    out += fmt::format("  {}: {} encoding, trained at length {}, {} step {}{}\n", run.name,
                       run.identity.encoding, run.identity.train_length, run.identity.checkpoint,
                       run.identity.checkpoint_step,
                       run.supported ? "" : " (n/a: " + run.unsupported + ")");
    if (!run.identity.origin.empty()) out += "    " + run.identity.origin + "\n";
    for (size_t i = 0; i < run.skipped.size(); ++i) {
      if (!run.skipped[i].empty())
        out += fmt::format("    n/a at {}: {}\n", c.lengths[i], run.skipped[i]);
    }
  }

  return out;
}

// One row per length: the setting, tokens, each run's cell and, for two runs, the paired
// difference.
std::string comparison_rows(const Comparison& c) {
  std::string out;
  std::vector<std::string> headers;
  std::vector<std::vector<std::string>> cells(c.lengths.size());
  for (const auto& run : c.runs)
    headers.push_back(fmt::format("{} ({})", run.name, run.identity.encoding));
  std::vector<size_t> widths(c.runs.size());
  for (size_t r = 0; r < c.runs.size(); ++r) {
    widths[r] = headers[r].size();
    for (size_t i = 0; i < c.lengths.size(); ++i) {
      cells[i].push_back(cell(c, c.runs[r], i));
      widths[r] = std::max(widths[r], cells[i].back().size());
    }
  }
  const bool paired = has_paired(c);
  std::string head = fmt::format("{:>8} {:>12} {:>10}", "length", "setting", "tokens");
  for (size_t r = 0; r < c.runs.size(); ++r) head += " | " + pad_left(headers[r], widths[r]);
  if (paired)
    head +=
        fmt::format(" | {:>31} {:>25}", "nll/token a-b [95% interval]", "ppl a/b [95% interval]");
  out += head + "\n";
  for (size_t i = 0; i < c.lengths.size(); ++i) {
    std::string setting = "-";
    int64_t tokens = 0;
    for (const auto& run : c.runs) {
      if (!run.evaluated(i)) continue;
      setting = method_setting(run.results[i]);
      tokens = run.results[i].tokens;
      break;
    }
    std::string line = fmt::format("{:>8} {:>12} {:>10}", c.lengths[i], setting, tokens);
    for (size_t r = 0; r < c.runs.size(); ++r) line += " | " + pad_left(cells[i][r], widths[r]);
    if (paired && (!c.runs[0].evaluated(i) || !c.runs[1].evaluated(i))) {
      line += fmt::format(" | {:>31} {:>25}", "n/a", "n/a");
    } else if (paired) {
      const auto d = paired_at(c, i);
      const std::string diff =
          d.diff.valid ? fmt::format("{:+.4f} [{:+.4f},{:+.4f}]", d.mean_diff, d.diff.lo, d.diff.hi)
                       : fmt::format("{:+.4f} [n/a]", d.mean_diff);
      const std::string ratio = d.diff.valid ? fmt::format("{:.3f} [{:.3f},{:.3f}]", d.ppl_ratio(),
                                                           std::exp(d.diff.lo), std::exp(d.diff.hi))
                                             : fmt::format("{:.3f} [n/a]", d.ppl_ratio());
      line += fmt::format(" | {:>31} {:>25}", diff, ratio);
    }
    out += line + "\n";
  }
  return out;
}

// The legend, the bits-per-byte conversion, the intervals' method and the notes.
std::string comparison_footer(const Comparison& c) {
  const bool chars = reports_bpc(c.tokenizer);
  const bool paired = has_paired(c);
  const CompareRun* any = first_supported(c);
  std::string out;
  out += fmt::format("cells: ppl [95% interval]{} ; * = the run's training length\n",
                     chars ? " bpc" : "");
  out +=
      "ppl = exp(total NLL / tokens scored); every run scores the same tokens in the same "
      "windows\n";
  if (c.bytes_per_token > 0) {
    out += fmt::format(
        "bits per byte = log2(ppl) / {:.3f} ({} tokens of this split average {:.3f} UTF-8 bytes)\n",
        c.bytes_per_token, c.tokenizer, c.bytes_per_token);
  }
  out += "intervals: " + describe(c.bootstrap);
  if (paired) {
    out += fmt::format(
        "; a-b is paired over the same windows (a = {}, b = {}); an interval that excludes 0 "
        "(ratio 1) means the difference is not resampling noise",
        c.runs[0].name, c.runs[1].name);
  }
  out += "\n";
  if (any) {  // every run scores the same windows, so one run's notes hold for all
    for (size_t i = 0; i < any->results.size(); ++i) {
      const std::string note = any->evaluated(i) ? short_window_note(any->results[i]) : "";
      if (!note.empty()) out += "note: " + note + "\n";
    }
  }
  if (c.per_position && any && !any->results.empty()) {
    out += per_position_heading(any->results.front().protocol);
    for (const auto& run : c.runs) {
      if (!run.supported) continue;
      out += fmt::format(" {}:\n", run.name);
      for (size_t i = 0; i < run.results.size(); ++i) {
        if (run.evaluated(i)) out += format_per_position(run.results[i]) + "\n";
      }
    }
  }
  return out;
}

}  // namespace

std::string format_comparison_table(const Comparison& c) {
  return comparison_heading(c) + comparison_rows(c) + comparison_footer(c);
}

}  // namespace txl
