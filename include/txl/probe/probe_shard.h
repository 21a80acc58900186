// Probes split across processes (`txl eval --shard K/N`): which windows shard K scores, and
// how the shards' partial results come back together.
//
// A probe scores groups of equal-length windows (a copy distance's repeated windows, a
// passkey cell, an attention length, a RECL context), each group in passes of
// windows_per_pass windows (probe_scoring.h). Shard K of N takes the passes
// [P K / N, P (K + 1) / N) of the P passes one process makes, in that process's order: the
// block rule of the evaluation's shards, over passes rather than windows, so that every pass
// a shard makes holds the same windows as the one-process pass (a GEMM may round a row in
// the last bits differently beside other rows) and the merged result is the one-process
// result to the last bit. With more shards than passes some shards score nothing; that is
// legal and their partials hold no pieces.
//
// A shard's partial result is JSON: {"pieces": [{"group", "first", "end", "records"}], ...}
// where a piece covers the group's windows [first, end) and `records` is what the probe's
// finish needs of them (one record per window, or per pass where only sums are kept).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace txl {

// Shard `index` of `count` (--shard K/N); one process is shard 0 of 1.
struct ProbeShard {
  int64_t index = 0;
  int64_t count = 1;
};

// The most shards a probe is split into: far more processes than a probe has passes.
inline constexpr int64_t kMaxProbeShards = 4096;

// "K/N" with 0 <= K < N <= kMaxProbeShards; InputError naming `option` otherwise.
ProbeShard parse_probe_shard(const std::string& text, const std::string& option);
std::string to_string(const ProbeShard& shard);  // "K/N"

// The block [first, end) of `units` that shard takes: [units K / N, units (K + 1) / N).
std::pair<int64_t, int64_t> probe_shard_block(int64_t units, const ProbeShard& shard);

// `windows` windows of `length` tokens, scored by one score_windows call.
struct WindowGroup {
  int64_t windows = 0;
  int64_t length = 0;
};

// Per group, the windows [first, end) that `shard` scores (first == end: none).
std::vector<std::pair<int64_t, int64_t>> shard_windows(const std::vector<WindowGroup>& groups,
                                                       int64_t batch_tokens,
                                                       const ProbeShard& shard);

// One piece of a partial: group `group`'s windows [first, end) and their records.
nlohmann::json shard_piece(size_t group, int64_t first, int64_t end, nlohmann::json records);

// InputError naming `probe` when `partial` (one shard's) is not a list of pieces whose
// records match their windows: one record per window, or for a probe that keeps one per pass
// of windows (attention), 1 to one per window.
void check_partial_pieces(const nlohmann::json& partial, const std::string& probe);

// Every group's records in window order, from the pieces of all partials: InputError naming
// `probe` when a window of a group is in no piece or in two (a shard missing or given twice),
// or a partial fails check_partial_pieces.
std::vector<std::vector<nlohmann::json>> gather_pieces(const std::vector<nlohmann::json>& partials,
                                                       const std::vector<int64_t>& group_windows,
                                                       const std::string& probe);

// The value of `key` every partial holds: InputError naming `probe` when two differ.
nlohmann::json common_field(const std::vector<nlohmann::json>& partials, const std::string& key,
                            const std::string& probe);

}  // namespace txl
