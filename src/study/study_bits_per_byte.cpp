#include "txl/study/study_bits_per_byte.h"

#include <spdlog/fmt/fmt.h>

#include <cmath>

#include "txl/study/group_table.h"

namespace txl {

namespace {

double to_bpb(double ppl, double bytes_per_token) { return std::log2(ppl) / bytes_per_token; }

std::string format_bpb(const Estimate& e) {
  if (!e.has_interval) return fmt::format("{:.4f}", e.value);
  return fmt::format("{:.4f} [{:.4f}, {:.4f}]", e.value, e.lo, e.hi);
}

}  // namespace

Estimate bits_per_byte_estimate(const Estimate& ppl, double bytes_per_token) {
  Estimate out = ppl;
  if (!(bytes_per_token > 0)) return Estimate{};
  out.value = to_bpb(ppl.value, bytes_per_token);
  if (ppl.has_interval) {
    out.lo = to_bpb(ppl.lo, bytes_per_token);
    out.hi = to_bpb(ppl.hi, bytes_per_token);
  }
  return out;
}

bool tokens_differ(const StudyStats& stats) {
  for (const auto& g : stats.groups) {
    const auto& first = stats.groups.front();
    if (g.tokenizer != first.tokenizer || g.bytes_per_token != first.bytes_per_token) return true;
  }
  return false;
}

std::string tokens_summary(const StudyStats& stats) {
  if (stats.groups.empty()) return "";
  if (tokens_differ(stats)) {
    std::string out = "- Tokens differ between groups, so perplexities count different units: ";
    for (size_t i = 0; i < stats.groups.size(); ++i) {
      const auto& g = stats.groups[i];
      out += fmt::format("{}{} {} ({:.3f} bytes per token)", i ? "; " : "", g.name, g.tokenizer,
                         g.bytes_per_token);
    }
    return out + ". Compare them in the bits-per-byte tables.\n";
  }
  const auto& g = stats.groups.front();
  if (!(g.bytes_per_token > 0)) return "";
  return fmt::format(
      "- Tokens: {}, {:.3f} UTF-8 bytes per token on the split; bits per byte = log2(ppl) / "
      "{:.3f}.\n",
      g.tokenizer, g.bytes_per_token, g.bytes_per_token);
}

std::string bits_per_byte_table(const StudySpec& spec, const StudyStats& stats, size_t p) {
  const auto& lengths = spec.eval.lengths;
  std::string md = fmt::format("## Bits per byte: {}\n\n", spec.protocols[p].label);
  md += group_table(
      lengths, all_groups(stats),
      [](const GroupStats& g) { return fmt::format("{} ({})", g.name, g.tokenizer); },
      [&](const GroupStats& g, size_t li) {
        const auto& row = g.rows[p][li];
        const bool known = row.unavailable.empty() && g.bytes_per_token > 0;
        return known ? format_bpb(bits_per_byte_estimate(row.ppl, g.bytes_per_token))
                     : std::string("n/a");
      });
  return md +
         "\nlog2(perplexity) / the split's UTF-8 bytes per token of each group's tokenizer, "
         "with the perplexity's interval mapped the same way: comparable across tokenizers "
         "where perplexity is not. A token is a " +
         std::string(
             "different unit in each tokenizer, so the ratio tables above pair groups only "
             "with a baseline of the same tokenizer.\n\n");
}

}  // namespace txl
