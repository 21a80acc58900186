// model.adaptive: adaptive input and adaptive softmax (Grave et al. 2017; Baevski and Auli
// 2019), as the Transformer-XL reference's AdaptiveEmbedding and ProjectedAdaptiveLogSoftmax
// compute them.
//
// The vocabulary, ordered by training frequency, is cut at cutoffs c_1 < ... < c_n into a head
// [0, c_1) and n tail clusters [c_i, c_{i+1}) (c_{n+1} = V). Cluster i (head = 0) has width
// d_model / div_val^i; with div_val > 1 every cluster is projected to and from d_model, with
// div_val 1 every cluster has width d_model and there is no projection (txl's embedding width
// is d_model). tie_projs[i]: the output's projection of cluster i is the input's.
//
// JSON: null (the full softmax) or {"cutoffs": [...], "div_val": 1, "tie_projs": [...]}, where
// tie_projs is one bool per cluster (head first) or one bool for all, and defaults to the
// reference's [false, true, ..., true].
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace txl {

struct AdaptiveConfig {
  std::vector<int64_t> cutoffs;  // c_1 < ... < c_n, each in (0, V)
  int64_t div_val = 1;           // cluster i has width d_model / div_val^i
  std::vector<bool> tie_projs;   // n + 1 entries, head first (resolved when read)

  int64_t n_clusters() const { return static_cast<int64_t>(cutoffs.size()); }  // tail clusters
  // The width of cluster i (0 = head): d_model / div_val^i, 0 when that rounds to nothing.
  int64_t width(int64_t d_model, int64_t cluster) const;
  bool operator==(const AdaptiveConfig& other) const {
    return cutoffs == other.cutoffs && div_val == other.div_val && tie_projs == other.tie_projs;
  }
};

// Reads model.adaptive (null or the object above) into `out`; throws InputError naming `path`.
void read_adaptive(const nlohmann::json& v, const std::string& path,
                   std::optional<AdaptiveConfig>& out);
// null, or the object with every key resolved.
nlohmann::json adaptive_to_json(const std::optional<AdaptiveConfig>& adaptive);
// The keys of the object, for messages and --set model.adaptive.KEY.
const std::vector<std::string>& adaptive_keys();

// The rules that need no vocabulary (called by validate()): cutoffs > 0 and strictly
// increasing, div_val >= 1, no cluster of width 0, tie_projs of n + 1 entries, and a word
// tokenizer (the clusters assume ids ordered by training frequency, which only the word
// vocabulary guarantees). `tokenizer` is the data.tokenizer name.
void validate_adaptive(const std::optional<AdaptiveConfig>& adaptive, int64_t d_model,
                       const std::string& tokenizer, bool word_tokenizer);
// The rule that needs it: the last cutoff below the vocabulary's size (each cluster holds at
// least one word). Train calls it once the vocabulary is known, before writing anything.
void validate_adaptive_vocab(const std::optional<AdaptiveConfig>& adaptive, int64_t vocab_size);

}  // namespace txl
