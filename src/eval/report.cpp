#include "txl/eval/report.h"

#include <spdlog/fmt/fmt.h>

#include <cmath>

#include "txl/data/tokenizers.h"
#include "txl/eval/protocol.h"

namespace txl {

namespace {

double to_bits(double nats) { return nats / std::log(2.0); }

nlohmann::json maybe(bool valid, double value) {
  return valid ? nlohmann::json(value) : nlohmann::json();
}

std::string format_interval(const Interval& i) {
  if (!i.valid) return "n/a (1 window)";
  return fmt::format("[{:.3f}, {:.3f}]", std::exp(i.lo), std::exp(i.hi));
}

}  // namespace

std::string describe_method(const EvalResult& r) {
  const EvalProtocol& protocol = eval_protocol(r.protocol);
  return std::string(protocol.name) + ": " + protocol.description;
}

std::string method_setting(const EvalResult& r) {
  const std::string aid = aid_label(r.aid, r.aid_factor);
  const std::string method = settings_text(eval_protocol(r.protocol), r.settings);
  if (aid.empty()) return method;
  return method == "-" ? aid : method + ", " + aid;
}

double bits_per_byte(double bits_per_token, double bytes_per_token) {
  return bits_per_token / bytes_per_token;
}

nlohmann::json summary_to_json(const EvalResult& e, bool chars, const BootstrapOptions& bootstrap,
                               double bytes_per_token) {
  const auto ci = mean_nll_interval(e, bootstrap);
  nlohmann::json row = {{"method", e.protocol},
                        {"length", e.length},
                        {"window", longest_window(e)},
                        {"tokens", e.tokens},
                        {"windows", e.window_nll.size()},
                        {"nll", e.mean_nll()},
                        {"nll_sum", e.nll},
                        {"ppl", e.ppl()},
                        {"ppl_lo", maybe(ci.valid, std::exp(ci.lo))},
                        {"ppl_hi", maybe(ci.valid, std::exp(ci.hi))}};
  if (chars) {
    row["bpc"] = e.bpc();
    row["bpc_lo"] = maybe(ci.valid, to_bits(ci.lo));
    row["bpc_hi"] = maybe(ci.valid, to_bits(ci.hi));
  }
  if (bytes_per_token > 0) {
    row["bpb"] = bits_per_byte(e.bpc(), bytes_per_token);
    row["bpb_lo"] = maybe(ci.valid, bits_per_byte(to_bits(ci.lo), bytes_per_token));
    row["bpb_hi"] = maybe(ci.valid, bits_per_byte(to_bits(ci.hi), bytes_per_token));
  }
  if (e.aid != ExtrapolationAid::kNone) {
    row["aid"] = to_string(e.aid);
    row["aid_factor"] = e.aid_factor;
  }
  row.update(settings_to_json(eval_protocol(e.protocol), e.settings));
  return row;
}

std::string short_window_note(const EvalResult& e) {
  const int64_t longest = longest_window(e);
  if (e.tokens == 0 || longest >= e.length) return "";
  const EvalProtocol& protocol = eval_protocol(e.protocol);
  const std::string what = protocol.unit;
  return fmt::format(
      "length {}: only {} tokens were scored (the split, or --max-tokens, is shorter than "
      "the length{}), so this row scores {} {}{} of at most {} tokens, not {}",
      e.length, e.tokens, protocol.needs_memory ? " per stream" : "", e.window_nll.size(), what,
      e.window_nll.size() == 1 ? "" : "s", longest, e.length);
}

nlohmann::json per_position_to_json(const EvalResult& e) {
  return {{"bucket_start", e.position_start},
          {"bucket_tokens", e.position_count},
          {"mean_nll", e.position_nll}};
}

std::string format_per_position(const EvalResult& e) {
  std::string out = fmt::format("  L={}:", e.length);
  for (size_t b = 0; b < e.position_nll.size(); ++b) {
    const int64_t end = b + 1 < e.position_start.size() ? e.position_start[b + 1] : e.length;
    out += fmt::format("{} [{},{}) {:.3f}", b == 0 ? "" : " |", e.position_start[b], end,
                       e.position_nll[b]);
  }
  return out;
}

std::string per_position_heading(const std::string& method) {
  std::string out = "mean NLL per position inside the window ([first, end) of each bucket)";
  const std::string note = eval_protocol(method).position_note;
  if (!note.empty()) out += "; " + note;
  return out + ":\n";
}

namespace {

// Why result i is n/a ("" when it was evaluated).
const std::string& skipped_reason(const EvalReport& r, size_t i) {
  static const std::string evaluated;
  return i < r.skipped.size() ? r.skipped[i] : evaluated;
}

// The first result evaluated, whose protocol names the report's (nullptr: none).
const EvalResult* first_evaluated(const EvalReport& r) {
  for (size_t i = 0; i < r.results.size(); ++i) {
    if (skipped_reason(r, i).empty()) return &r.results[i];
  }
  return nullptr;
}

}  // namespace

nlohmann::json report_to_json(const EvalReport& r) {
  const bool chars = reports_bpc(r.tokenizer);
  nlohmann::json results = nlohmann::json::array();
  for (size_t i = 0; i < r.results.size(); ++i) {
    const auto& e = r.results[i];
    if (!skipped_reason(r, i).empty()) {
      results.push_back({{"length", e.length}, {"skipped", skipped_reason(r, i)}});
      continue;
    }
    auto row = summary_to_json(e, chars, r.bootstrap, r.bytes_per_token);
    row["cached"] = i < r.cached.size() && r.cached[i];
    if (r.per_position) row["per_position"] = per_position_to_json(e);
    results.push_back(row);
  }
  nlohmann::json j = {{"run", r.run},
                      {"split", r.split},
                      {"method", first_evaluated(r) ? first_evaluated(r)->protocol : ""},
                      {"tokenizer", r.tokenizer},
                      {"bytes_per_token", r.bytes_per_token},
                      {"precision", r.precision},
                      {"interval", to_json(r.bootstrap)},
                      {"results", results}};
  add_run_identity(j, r.identity);
  if (!r.documents.empty()) {
    nlohmann::json docs = nlohmann::json::array();
    for (const auto& d : r.documents) {
      nlohmann::json per_length = nlohmann::json::array();
      for (size_t i = 0; i < d.results.size(); ++i) {
        const auto& e = d.results[i];
        if (!skipped_reason(r, i).empty()) continue;
        per_length.push_back(
            {{"length", e.length}, {"tokens", e.tokens}, {"nll_sum", e.nll}, {"ppl", e.ppl()}});
      }
      docs.push_back({{"file", d.file},
                      {"tokens", d.tokens},
                      {"unknown", d.unknown},
                      {"results", per_length}});
    }
    j["texts"] = docs;
  }
  return j;
}

RunIdentity identify_run(const LoadedRun& run, const std::string& checkpoint_file) {
  return {to_string(run.config.model.pos_encoding), run.config.train.tgt_len, checkpoint_file,
          run.state.step, describe_origin(run.paths)};
}

void add_run_identity(nlohmann::json& j, const RunIdentity& id) {
  j["encoding"] = id.encoding;
  j["train_length"] = id.train_length;
  j["checkpoint"] = id.checkpoint;
  j["checkpoint_step"] = id.checkpoint_step;
  j["origin"] = id.origin;
}

// With --text: each file's tokens, <unk>s and perplexity at each length evaluated (the table
// above is their total).
static std::string format_documents(const EvalReport& r) {
  std::string out = "per file (each scored on its own; the table is their total):\n";
  for (const auto& d : r.documents) {
    out += fmt::format("  {}: {} tokens, {} <unk>", d.file, d.tokens, d.unknown);
    for (size_t i = 0; i < d.results.size(); ++i)
      if (skipped_reason(r, i).empty())
        out += fmt::format(" | L {} ppl {:.3f}", d.results[i].length, d.results[i].ppl());
    out += "\n";
  }
  return out;
}

std::string format_report_table(const EvalReport& r) {
  const bool chars = reports_bpc(r.tokenizer);
  const bool bytes = r.bytes_per_token > 0;
  const std::string scored =
      r.documents.empty() ? r.split + " split" : fmt::format("{} text file(s)", r.documents.size());
  std::string out = fmt::format("run {} | {} | {} | {} step {} | trained at length {}{}\n", r.run,
                                r.identity.encoding, scored, r.identity.checkpoint,
                                r.identity.checkpoint_step, r.identity.train_length,
                                r.precision == "fp32" ? "" : " | precision " + r.precision);
  if (!r.identity.origin.empty()) out += r.identity.origin + "\n";
  if (first_evaluated(r)) out += "method " + describe_method(*first_evaluated(r)) + "\n";
  out += fmt::format(
      "{:>8} {:>11} {:>12} {:>10} {:>8} {:>10} {:>10} {:>20}{}\n", "length", "method", "setting",
      "tokens", "windows", "nll/token", "ppl", "95% interval",
      (chars ? fmt::format(" {:>7}", "bpc") : "") + (bytes ? fmt::format(" {:>7}", "bpb") : ""));
  for (size_t i = 0; i < r.results.size(); ++i) {
    const auto& e = r.results[i];
    std::string mark = e.length == r.identity.train_length ? " *" : "";
    if (!skipped_reason(r, i).empty()) {
      out += fmt::format("{:>8} {:>11}   {}{}\n", e.length, "n/a", skipped_reason(r, i), mark);
      continue;
    }
    if (!short_window_note(e).empty()) mark += " !";
    const std::string cached = i < r.cached.size() && r.cached[i] ? " (cached)" : "";
    out += fmt::format(
        "{:>8} {:>11} {:>12} {:>10} {:>8} {:>10.4f} {:>10.3f} {:>20}{}{}{}\n", e.length, e.protocol,
        method_setting(e), e.tokens, e.window_nll.size(), e.mean_nll(), e.ppl(),
        format_interval(mean_nll_interval(e, r.bootstrap)),
        (chars ? fmt::format(" {:>7.4f}", e.bpc()) : "") +
            (bytes ? fmt::format(" {:>7.4f}", bits_per_byte(e.bpc(), r.bytes_per_token)) : ""),
        mark, cached);
  }
  out += "(* = training length; ppl = exp(total NLL / tokens scored); interval: " +
         describe(r.bootstrap) + ")\n";
  if (bytes) {
    out += fmt::format(
        "(bpb = bits per byte: bits per token / {:.3f}, the split's UTF-8 bytes per {} token; "
        "comparable across tokenizers)\n",
        r.bytes_per_token, r.tokenizer);
  }
  for (size_t i = 0; i < r.results.size(); ++i) {
    const std::string note = short_window_note(r.results[i]);
    if (!note.empty() && skipped_reason(r, i).empty()) out += "! " + note + "\n";
  }
  if (!r.documents.empty()) out += format_documents(r);
  if (r.per_position && first_evaluated(r)) {
    out += per_position_heading(first_evaluated(r)->protocol);
    for (size_t i = 0; i < r.results.size(); ++i) {
      if (skipped_reason(r, i).empty()) out += format_per_position(r.results[i]) + "\n";
    }
  }
  return out;
}

}  // namespace txl
