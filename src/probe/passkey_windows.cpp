// Building passkey windows (the layout in passkey_windows.h); passkey_scoring.cpp scores them.
#include "txl/probe/passkey_windows.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "txl/data/tokenizers.h"
#include "txl/util/error.h"

namespace txl {

int64_t passkey_needle_start(int64_t length, double depth, int64_t cue_len, int64_t key_len) {
  const int64_t filler = length - 2 * (cue_len + key_len);
  return static_cast<int64_t>(
      std::llround(depth * static_cast<double>(std::max<int64_t>(0, filler))));
}

std::vector<int32_t> passkey_candidates(const Vocab& vocab, const std::vector<int32_t>& ids,
                                        int64_t count) {
  std::vector<int32_t> digits;
  if (tokenizer_def(vocab.kind()).per_symbol) {
    for (char c = '0'; c <= '9'; ++c) {
      if (vocab.contains(std::string(1, c)))
        digits.push_back(static_cast<int32_t>(vocab.id(std::string(1, c))));
    }
  }
  if (digits.size() >= 2) return digits;
  std::vector<int64_t> freq(static_cast<size_t>(vocab.size()), 0);
  for (const int32_t id : ids) {
    if (id >= 0 && id < vocab.size()) ++freq[static_cast<size_t>(id)];
  }
  std::vector<int32_t> tokens;
  for (int64_t id = 0; id < vocab.size(); ++id) {
    const auto& t = vocab.token(id);
    if (t == kUnkToken || t == kEosToken) continue;
    tokens.push_back(static_cast<int32_t>(id));
  }
  std::stable_sort(tokens.begin(), tokens.end(),
                   [&](int32_t a, int32_t b) { return freq[size_t(a)] < freq[size_t(b)]; });
  if (static_cast<int64_t>(tokens.size()) > count) tokens.resize(static_cast<size_t>(count));
  return tokens;
}

namespace {

void check_passkey_layout(const std::vector<int32_t>& ids, const std::vector<int32_t>& candidates,
                          const PasskeyProbeOptions& o, int64_t length) {
  if (length < 2 * (o.cue_len + o.key_len) + 1) {
    throw InputError(fmt::format(
        "passkey.lengths {} cannot hold two cues and keys (2 x ({} + {})) and a token of filler",
        length, o.cue_len, o.key_len));
  }
  const int64_t needed = length - 2 * o.key_len;  // filler and one cue, drawn apart
  if (needed > static_cast<int64_t>(ids.size())) {
    throw InputError(
        fmt::format("passkey.lengths {} needs {} tokens of the evaluated split, which "
                    "has {}",
                    length, needed, ids.size()));
  }
  if (candidates.empty()) throw InputError("passkey: the vocabulary has no candidate key tokens");
}

// The candidates that occur nowhere in `text`.
std::vector<int32_t> unused_candidates(const std::vector<int32_t>& candidates,
                                       const std::vector<int32_t>& text) {
  const std::set<int32_t> seen(text.begin(), text.end());
  std::vector<int32_t> out;
  for (const int32_t c : candidates) {
    if (!seen.count(c)) out.push_back(c);
  }
  return out;
}

PasskeyInstance build_one(const std::vector<int32_t>& ids, const std::vector<int32_t>& candidates,
                          const PasskeyProbeOptions& o, int64_t length, double depth,
                          SplitMix64& rng) {
  const int64_t filler_len = length - 2 * (o.cue_len + o.key_len);
  // Filler then cue: one stretch of the split, so the cue is ordinary text as well.
  const auto start = static_cast<int64_t>(rng.below(
      static_cast<size_t>(static_cast<int64_t>(ids.size()) - filler_len - o.cue_len + 1)));
  const std::vector<int32_t> filler(ids.begin() + start, ids.begin() + start + filler_len);
  const std::vector<int32_t> cue(ids.begin() + start + filler_len,
                                 ids.begin() + start + filler_len + o.cue_len);
  std::vector<int32_t> text = filler;
  text.insert(text.end(), cue.begin(), cue.end());
  const auto usable = unused_candidates(candidates, text);
  if (usable.empty()) {
    throw InputError(
        fmt::format("passkey: every candidate key token occurs in the filler of a "
                    "window of {} tokens; use shorter passkey.lengths",
                    length));
  }
  PasskeyInstance inst;
  inst.length = length;
  inst.depth = depth;
  for (int64_t i = 0; i < o.key_len; ++i) inst.key.push_back(usable[rng.below(usable.size())]);
  inst.needle_start = passkey_needle_start(length, depth, o.cue_len, o.key_len);
  inst.key_start = inst.needle_start + o.cue_len;
  auto& w = inst.window;
  w.assign(filler.begin(), filler.begin() + inst.needle_start);
  w.insert(w.end(), cue.begin(), cue.end());
  w.insert(w.end(), inst.key.begin(), inst.key.end());
  w.insert(w.end(), filler.begin() + inst.needle_start, filler.end());
  w.insert(w.end(), cue.begin(), cue.end());
  w.insert(w.end(), inst.key.begin(), inst.key.end());
  return inst;
}

}  // namespace

std::vector<PasskeyInstance> build_passkey_instances(const std::vector<int32_t>& ids,
                                                     const std::vector<int32_t>& candidates,
                                                     const PasskeyProbeOptions& o) {
  std::vector<PasskeyInstance> out;
  for (const int64_t length : o.lengths) {
    check_passkey_layout(ids, candidates, o, length);
    for (const double depth : o.depths) {
      // A seed per cell: adding a length or a depth leaves the other cells' windows alone.
      SplitMix64 rng(o.seed ^ (static_cast<uint64_t>(length) * 0x9E3779B97F4A7C15ULL) ^
                     static_cast<uint64_t>(std::llround(depth * 1e6)) * 0xC2B2AE3D27D4EB4FULL);
      for (int64_t t = 0; t < o.trials; ++t)
        out.push_back(build_one(ids, candidates, o, length, depth, rng));
    }
  }
  return out;
}

}  // namespace txl
