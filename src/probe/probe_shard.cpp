#include "txl/probe/probe_shard.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <map>

#include "txl/probe/probe_scoring.h"
#include "txl/util/blocks.h"
#include "txl/util/error.h"

namespace txl {

namespace {

// A whole decimal number, nothing else (no sign, no spaces); -1 otherwise.
int64_t whole_number(const std::string& text) {
  if (text.empty() || text.size() > 9) return -1;
  int64_t v = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  return v;
}

}  // namespace

ProbeShard parse_probe_shard(const std::string& text, const std::string& option) {
  const auto slash = text.find('/');
  const int64_t k = slash == std::string::npos ? -1 : whole_number(text.substr(0, slash));
  const int64_t n = slash == std::string::npos ? -1 : whole_number(text.substr(slash + 1));
  if (k < 0 || n < 1 || n > kMaxProbeShards || k >= n) {
    throw InputError(fmt::format(
        "{} \"{}\" is not valid; expected K/N, shard K of N with 0 <= K < N and 1 <= N <= {} "
        "(e.g. 0/2 and 1/2 for two processes)",
        option, text, kMaxProbeShards));
  }
  return {k, n};
}

std::string to_string(const ProbeShard& shard) {
  return std::to_string(shard.index) + "/" + std::to_string(shard.count);
}

std::pair<int64_t, int64_t> probe_shard_block(int64_t units, const ProbeShard& shard) {
  return contiguous_block(units, shard.index, shard.count);
}

std::vector<std::pair<int64_t, int64_t>> shard_windows(const std::vector<WindowGroup>& groups,
                                                       int64_t batch_tokens,
                                                       const ProbeShard& shard) {
  std::vector<int64_t> per_pass, passes;
  int64_t total = 0;
  for (const auto& g : groups) {
    per_pass.push_back(windows_per_pass(batch_tokens, g.length));
    passes.push_back((g.windows + per_pass.back() - 1) / per_pass.back());
    total += passes.back();
  }
  const auto [p0, p1] = probe_shard_block(total, shard);
  std::vector<std::pair<int64_t, int64_t>> out;
  int64_t offset = 0;  // passes of the groups before this one
  for (size_t g = 0; g < groups.size(); ++g) {
    const int64_t lo = std::clamp<int64_t>(p0 - offset, 0, passes[g]);
    const int64_t hi = std::clamp<int64_t>(p1 - offset, 0, passes[g]);
    out.emplace_back(std::min(groups[g].windows, lo * per_pass[g]),
                     std::min(groups[g].windows, hi * per_pass[g]));
    offset += passes[g];
  }
  return out;
}

nlohmann::json shard_piece(size_t group, int64_t first, int64_t end, nlohmann::json records) {
  return {{"group", group}, {"first", first}, {"end", end}, {"records", std::move(records)}};
}

namespace {

// The probes whose partials keep one record per pass of windows (sums over the pass); every
// other probe keeps one record per window.
bool records_per_pass(const std::string& probe) { return probe == "attention"; }

// A piece's integer field; InputError naming the probe when it is missing or not an integer.
int64_t piece_integer(const nlohmann::json& piece, const char* key, const std::string& probe) {
  if (!piece.is_object() || !piece.contains(key) || !piece.at(key).is_number_integer())
    throw InputError(
        fmt::format("probe {}: a shard's piece has no whole number \"{}\"", probe, key));
  return piece.at(key).get<int64_t>();
}

}  // namespace

void check_partial_pieces(const nlohmann::json& partial, const std::string& probe) {
  if (!partial.is_object() || !partial.contains("pieces") || !partial.at("pieces").is_array())
    throw InputError(
        fmt::format("probe {}: a shard's partial result has no list of pieces", probe));
  const bool per_pass = records_per_pass(probe);
  for (const auto& piece : partial.at("pieces")) {
    const int64_t g = piece_integer(piece, "group", probe);
    const int64_t first = piece_integer(piece, "first", probe);
    const int64_t end = piece_integer(piece, "end", probe);
    if (g < 0 || first < 0 || end <= first)
      throw InputError(
          fmt::format("probe {}: a piece of group {} has windows [{}, {})", probe, g, first, end));
    // One record per window, or per pass (at least one, at most one per window): a piece
    // whose records do not match its windows would be read past its end or short.
    const int64_t windows = end - first;
    const int64_t count = piece.contains("records") && piece.at("records").is_array()
                              ? static_cast<int64_t>(piece.at("records").size())
                              : -1;
    if (per_pass ? (count < 1 || count > windows) : count != windows)
      throw InputError(fmt::format(
          "probe {}: the piece of group {} with windows [{}, {}) holds {} records where {} {} "
          "expected",
          probe, g, first, end, count < 0 ? "no list of" : std::to_string(count),
          per_pass ? "1 to " + std::to_string(windows) : std::to_string(windows),
          per_pass ? "(one per pass) are" : "(one per window) are"));
  }
}

std::vector<std::vector<nlohmann::json>> gather_pieces(const std::vector<nlohmann::json>& partials,
                                                       const std::vector<int64_t>& group_windows,
                                                       const std::string& probe) {
  // Per group: first window -> (end, records), which must tile [0, windows).
  std::vector<std::map<int64_t, std::pair<int64_t, const nlohmann::json*>>> pieces(
      group_windows.size());
  for (const auto& partial : partials) {
    check_partial_pieces(partial, probe);
    for (const auto& piece : partial.at("pieces")) {
      const auto g = piece.at("group").get<int64_t>();
      const auto first = piece.at("first").get<int64_t>(), end = piece.at("end").get<int64_t>();
      if (g >= static_cast<int64_t>(pieces.size()) || end > group_windows[size_t(g)] ||
          !pieces[size_t(g)].emplace(first, std::make_pair(end, &piece.at("records"))).second)
        throw InputError(
            fmt::format("probe {}: windows [{}, {}) of group {} are given twice or "
                        "do not belong to the probe",
                        probe, first, end, g));
    }
  }
  std::vector<std::vector<nlohmann::json>> out(group_windows.size());
  for (size_t g = 0; g < pieces.size(); ++g) {
    int64_t next = 0;
    for (const auto& [first, piece] : pieces[g]) {
      if (first != next) break;
      for (const auto& r : *piece.second) out[g].push_back(r);
      next = piece.first;
    }
    if (next != group_windows[g])
      throw InputError(fmt::format(
          "probe {}: group {} has {} windows but the shards cover them only up to window {} "
          "(a shard missing, or given twice)",
          probe, g, group_windows[g], next));
  }
  return out;
}

nlohmann::json common_field(const std::vector<nlohmann::json>& partials, const std::string& key,
                            const std::string& probe) {
  if (partials.empty()) throw InputError("probe " + probe + ": no partial results to finish");
  const nlohmann::json& first = partials.front().at(key);
  for (size_t i = 1; i < partials.size(); ++i) {
    if (partials[i].at(key) != first)
      throw InputError(
          fmt::format("probe {}: shard {}'s {} differs from shard 0's", probe, i, key));
  }
  return first;
}

}  // namespace txl
