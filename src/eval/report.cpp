#include "txl/eval/report.h"

#include <spdlog/fmt/fmt.h>

namespace txl {

nlohmann::json report_to_json(const EvalReport& r) {
  nlohmann::json results = nlohmann::json::array();
  for (const auto& e : r.results) {
    nlohmann::json row = {{"method", to_string(e.method)}, {"length", e.length}, {"tokens", e.tokens},
                          {"nll", e.mean_nll()}, {"nll_sum", e.nll}, {"ppl", e.ppl()}};
    if (r.tokenizer == "char") row["bpc"] = e.bpc();
    if (e.method == EvalMethod::kSliding) row["stride"] = e.stride;
    if (e.method == EvalMethod::kMemory) row["mem_len"] = e.mem_len;
    if (!e.position_nll.empty()) {
      row["per_position"] = {{"start", e.position_start}, {"mean_nll", e.position_nll}};
    }
    results.push_back(row);
  }
  return {{"run", r.run},
          {"split", r.split},
          {"method", r.results.empty() ? "" : to_string(r.results.front().method)},
          {"encoding", r.encoding},
          {"tokenizer", r.tokenizer},
          {"train_length", r.train_length},
          {"checkpoint_step", r.checkpoint_step},
          {"results", results}};
}

std::string format_report_table(const EvalReport& r) {
  const bool chars = r.tokenizer == "char";
  std::string out = fmt::format("run {} | {} | {} split | checkpoint step {} | trained at length {}\n",
                                r.run, r.encoding, r.split, r.checkpoint_step, r.train_length);
  out += fmt::format("{:>8} {:>11} {:>10} {:>10} {:>12}{}\n", "length", "method", "tokens",
                     "nll/token", "ppl", chars ? fmt::format(" {:>7}", "bpc") : "");
  for (const auto& e : r.results) {
    const std::string mark = e.length == r.train_length ? " *" : "";
    out += fmt::format("{:>8} {:>11} {:>10} {:>10.4f} {:>12.3f}{}{}\n", e.length, to_string(e.method),
                       e.tokens, e.mean_nll(), e.ppl(), chars ? fmt::format(" {:>7.4f}", e.bpc()) : "",
                       mark);
  }
  out += "(* = training length; ppl = exp(total NLL / tokens scored))\n";
  return out;
}

}  // namespace txl
