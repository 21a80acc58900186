// model.adaptive: reading, writing and the rules of config/adaptive.h.
#include "txl/config/adaptive.h"

#include <algorithm>
#include <string>
#include <vector>

#include "txl/config/config_keys.h"
#include "txl/config/config_ranges.h"
#include "txl/util/error.h"
#include "txl/util/json.h"
#include "txl/util/text.h"

namespace txl {

namespace {

using nlohmann::json;

// An integer as every config key reads one (an unsigned past int64 refused, never wrapped).
int64_t read_integer(const json& v, const std::string& path) {
  int64_t out = 0;
  config_keys::read_value(v, path, out);
  return out;
}

std::vector<int64_t> read_cutoffs(const json& v, const std::string& path) {
  if (!v.is_array() || v.empty()) {
    throw InputError(path + " must be a non-empty array of word ids, e.g. [20000, 40000, 200000]" +
                     ", got " + shown(v));
  }
  std::vector<int64_t> cutoffs;
  for (size_t i = 0; i < v.size(); ++i)
    cutoffs.push_back(read_integer(v[i], path + "[" + std::to_string(i) + "]"));
  return cutoffs;
}

// One bool per cluster, or one bool for all of them (size n_clusters + 1).
std::vector<bool> read_tie_projs(const json& v, const std::string& path, size_t clusters) {
  if (v.is_boolean()) return std::vector<bool>(clusters, v.get<bool>());
  const std::string what = " must be true, false or an array of one bool per cluster (head first)";
  if (!v.is_array()) throw InputError(path + what + ", got " + shown(v));
  std::vector<bool> ties;
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_boolean()) {
      throw InputError(path + "[" + std::to_string(i) + "]" + what + ", got " + shown(v[i]));
    }
    ties.push_back(v[i].get<bool>());
  }
  return ties;
}

}  // namespace

int64_t AdaptiveConfig::width(int64_t d_model, int64_t cluster) const {
  int64_t w = d_model;
  for (int64_t i = 0; i < cluster && w > 0; ++i) w /= div_val;
  return w;
}

const std::vector<std::string>& adaptive_keys() {
  static const std::vector<std::string> keys = {"cutoffs", "div_val", "tie_projs"};
  return keys;
}

void read_adaptive(const json& v, const std::string& path, std::optional<AdaptiveConfig>& out) {
  if (v.is_null()) {
    out.reset();
    return;
  }
  if (!v.is_object()) {
    throw InputError(path + " must be null (full softmax) or an object with keys " +
                     join(adaptive_keys()) + ", got " + shown(v));
  }
  for (const auto& item : v.items()) {
    const auto& keys = adaptive_keys();
    if (std::find(keys.begin(), keys.end(), item.key()) == keys.end()) {
      throw InputError("unknown key \"" + path + "." + item.key() + "\"; valid keys in \"" + path +
                       "\": " + join(keys) + suggestion(item.key(), keys));
    }
  }
  if (!v.contains("cutoffs")) {
    throw InputError(path + ".cutoffs is required: the first word id of each tail cluster, " +
                     "e.g. [20000, 40000, 200000]");
  }
  AdaptiveConfig a;
  a.cutoffs = read_cutoffs(v.at("cutoffs"), path + ".cutoffs");
  if (v.contains("div_val")) a.div_val = read_integer(v.at("div_val"), path + ".div_val");
  const size_t clusters = a.cutoffs.size() + 1;
  if (v.contains("tie_projs")) {
    a.tie_projs = read_tie_projs(v.at("tie_projs"), path + ".tie_projs", clusters);
  } else {
    // The reference's (train.py, WikiText-103): the head's projection untied, the tails' tied.
    a.tie_projs.assign(clusters, true);
    a.tie_projs[0] = false;
  }
  out = a;
}

json adaptive_to_json(const std::optional<AdaptiveConfig>& adaptive) {
  if (!adaptive) return nullptr;
  json ties = json::array();
  for (const bool tie : adaptive->tie_projs) ties.push_back(tie);
  return {{"cutoffs", adaptive->cutoffs}, {"div_val", adaptive->div_val}, {"tie_projs", ties}};
}

void validate_adaptive(const std::optional<AdaptiveConfig>& adaptive, int64_t d_model,
                       const std::string& tokenizer, bool word_tokenizer) {
  if (!adaptive) return;
  const AdaptiveConfig& a = *adaptive;
  if (!word_tokenizer) {
    throw InputError(
        "model.adaptive needs data.tokenizer \"word\", got \"" + tokenizer +
        "\": its clusters cut the vocabulary by training frequency, and only a word vocabulary " +
        "is ordered that way (<unk>, <eos>, then by descending count); set model.adaptive=null");
  }
  for (size_t i = 0; i < a.cutoffs.size(); ++i) {
    const std::string path = "model.adaptive.cutoffs[" + std::to_string(i) + "]";
    check_key_range("model.adaptive.cutoffs[]", a.cutoffs[i], path);
    if (i > 0 && a.cutoffs[i] <= a.cutoffs[i - 1]) {
      throw InputError(path + " (" + std::to_string(a.cutoffs[i]) +
                       ") must be greater than model.adaptive.cutoffs[" + std::to_string(i - 1) +
                       "] (" + std::to_string(a.cutoffs[i - 1]) +
                       "): cutoffs are strictly increasing");
    }
  }
  check_key_range("model.adaptive.div_val", a.div_val);
  const int64_t last = a.n_clusters();
  if (a.width(d_model, last) == 0) {
    throw InputError("model.adaptive.div_val (" + std::to_string(a.div_val) + ") leaves cluster " +
                     std::to_string(last) + " with width 0 (model.d_model " +
                     std::to_string(d_model) + " / " + std::to_string(a.div_val) + "^" +
                     std::to_string(last) + "); lower div_val or use fewer cutoffs");
  }
  if (a.tie_projs.size() != a.cutoffs.size() + 1) {
    throw InputError("model.adaptive.tie_projs has " + std::to_string(a.tie_projs.size()) +
                     " entries, expected one per cluster: " + std::to_string(last + 1) +
                     " (the head and " + std::to_string(last) + " cutoffs), or one bool for all");
  }
}

void validate_adaptive_vocab(const std::optional<AdaptiveConfig>& adaptive, int64_t vocab_size) {
  if (!adaptive || adaptive->cutoffs.empty()) return;
  const size_t i = adaptive->cutoffs.size() - 1;
  if (adaptive->cutoffs[i] >= vocab_size) {
    throw InputError("model.adaptive.cutoffs[" + std::to_string(i) + "] (" +
                     std::to_string(adaptive->cutoffs[i]) +
                     ") must be below the vocabulary's size (" + std::to_string(vocab_size) +
                     " words): every cluster needs at least one word");
  }
}

}  // namespace txl
