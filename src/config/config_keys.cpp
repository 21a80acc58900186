// The configuration's key tables (config_keys.h) and reading one JSON value into one member
// of a non-enum kind (enum-valued keys: config_names.cpp).
#include "txl/config/config_keys.h"

#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "txl/config/config.h"
#include "txl/config/encodings.h"
#include "txl/util/error.h"
#include "txl/util/json.h"

namespace txl::config_keys {

using nlohmann::json;

void read_value(const json& v, const std::string& path, int64_t& out) {
  if (!v.is_number_integer()) throw InputError(path + " must be an integer, got " + shown(v));
  if (v.is_number_unsigned() &&
      v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    throw InputError(path + " must be an integer that fits in 64 bits, got " + shown(v));
  }
  out = v.get<int64_t>();
}

void read_value(const json& v, const std::string& path, double& out) {
  // Integers are accepted: "lr": 1 means 1.0.
  if (!v.is_number()) throw InputError(path + " must be a number, got " + shown(v));
  out = v.get<double>();
}

void read_value(const json& v, const std::string& path, bool& out) {
  if (!v.is_boolean()) throw InputError(path + " must be true or false, got " + shown(v));
  out = v.get<bool>();
}

void read_value(const json& v, const std::string& path, std::string& out) {
  if (!v.is_string()) throw InputError(path + " must be a string, got " + shown(v));
  out = v.get<std::string>();
}

void read_value(const json& v, const std::string& path, std::vector<int64_t>& out) {
  if (!v.is_array()) {
    throw InputError(path + " must be a non-empty array of positive integers, got " + shown(v));
  }
  std::vector<int64_t> values;
  for (size_t i = 0; i < v.size(); ++i) {
    int64_t value = 0;
    read_value(v[i], path + "[" + std::to_string(i) + "]", value);
    values.push_back(value);
  }
  out = std::move(values);
}

void read_value(const json& v, const std::string& path, std::optional<AdaptiveConfig>& out) {
  read_adaptive(v, path, out);
}

// ---------------------------------------------------------------------------------------------
// The tables.

const Fields<DataConfig>& data_fields() {
  using S = DataConfig;
  static const Fields<S> fields = {
      {"dir", &S::dir, "folder with train.txt, valid.txt, test.txt (required)"},
      {"tokenizer", &S::tokenizer,
       "char (code points) | byte (bytes, no <eos>: enwik8, text8) | word (whitespace + <eos>) | "
       "bpe | unigram (sentencepiece subwords)"},
      {"min_freq", &S::min_freq, "word: rarer training words become <unk>"},
      {"max_vocab", &S::max_vocab, "word: keep the most frequent N (0 = no limit)"},
      {"vocab_size", &S::vocab_size, "bpe, unigram: the subword vocabulary's size (required)"},
  };
  return fields;
}

const Fields<ModelConfig>& model_fields() {
  using S = ModelConfig;
  // The last entry, true, marks a key that sets a parameter's shape (Field::shapes).
  static const Fields<S> fields = {
      {"pos_encoding", &S::pos_encoding, "position encoding: one of `txl encodings`", true},
      {"n_layer", &S::n_layer, "number of transformer blocks", true},
      {"d_model", &S::d_model, "model width; must equal n_head * d_head", true},
      {"n_head", &S::n_head, "attention heads", true},
      {"d_head", &S::d_head, "width of one head", true},
      {"d_inner", &S::d_inner, "feed-forward width", true},
      {"dropout", &S::dropout, "dropout on embeddings, positions, attention output, FF"},
      {"dropatt", &S::dropatt, "dropout on attention probabilities"},
      {"pre_norm", &S::pre_norm, "false: post-norm blocks as in Transformer-XL", true},
      {"tie_weights", &S::tie_weights, "output layer shares the embedding matrix", true},
      {"clamp_len", &S::clamp_len, "relative: cap distances at this value (0 = no cap)"},
      {"max_rel_dist", &S::max_rel_dist, "relative_learned: table of 2*max_rel_dist-1 distances",
       true},
      {"init_std", &S::init_std, "weights start as N(0, init_std)"},
      {"adaptive", &S::adaptive,
       "null (full softmax) | {cutoffs, div_val, tie_projs}: adaptive input and softmax (word)",
       true},
  };
  return fields;
}

const Fields<TrainConfig>& train_fields() {
  using S = TrainConfig;
  static const Fields<S> fields = {
      {"tgt_len", &S::tgt_len, "tokens per segment"},
      {"mem_len", &S::mem_len, "memory length (must be 0 for absolute)"},
      {"same_length", &S::same_length,
       "every query attends over the same mem_len most recent keys (Transformer-XL's "
       "same_length; training and validation)"},
      {"tgt_len_max", &S::tgt_len_max,
       "> 0: each step draws its segment length from [tgt_len, tgt_len_max] (0 = fixed)"},
      {"batch_size", &S::batch_size, "number of contiguous streams"},
      {"max_steps", &S::max_steps, "optimizer steps"},
      {"lr", &S::lr, "peak learning rate"},
      {"warmup_steps", &S::warmup_steps, "linear warm-up, then cosine decay"},
      {"min_lr_ratio", &S::min_lr_ratio, "cosine decays to lr * min_lr_ratio"},
      {"weight_decay", &S::weight_decay, "AdamW decoupled weight decay"},
      {"clip", &S::clip, "gradient-norm clip (0 = off)"},
      {"seed", &S::seed, "random seed"},
      {"log_interval", &S::log_interval, "steps between progress lines"},
      {"eval_interval", &S::eval_interval, "steps between validations (0 = only at the end)"},
      {"eval_max_tokens", &S::eval_max_tokens, "validation tokens per evaluation (0 = all)"},
      {"threads", &S::threads, "CPU threads (0 = all cores)"},
      {"device", &S::device, "cpu | cuda | cuda:N | auto (cuda:0 if there is one, else cpu)"},
      {"precision", &S::precision, "fp32 | bf16 (CPU autocast; weights stay fp32)"},
      {"skip_nonfinite", &S::skip_nonfinite,
       "skip steps with a NaN/Inf loss or gradient (false: stop)"},
      {"probes", &S::probes,
       "probes run during training on the validation split: \"\" (none) or NAMES "
       "[PROBE.KEY=V,...]..., as --probes and --probe-set take them (\"copy copy.count=50\")"},
      {"probe_interval", &S::probe_interval, "steps between probe runs (>= 1)"},
      {"probe_max_tokens", &S::probe_max_tokens,
       "tokens the probes may forward over the whole run (all their runs together)"},
  };
  return fields;
}

const Fields<EvalConfig>& eval_fields() {
  using S = EvalConfig;
  static const Fields<S> fields = {
      {"lengths", &S::lengths, "evaluated window lengths"},
      {"split", &S::split, "valid | test"},
      {"batch_tokens", &S::batch_tokens, "windows per forward pass ~ batch_tokens / length"},
  };
  return fields;
}

const std::vector<std::string>& section_names() {
  static const std::vector<std::string> names = {"data", "model", "train", "eval"};
  return names;
}

std::vector<std::string> extra_key_names(const ModelConfig* /*section*/) {
  std::vector<std::string> keys;
  for (const auto& t : encoding_registry()) {
    for (const auto& option : t.options) keys.emplace_back(option.key);
  }
  return keys;
}

// model: an option of some encoding, stored by name.
bool read_extra(const json& v, const std::string& key, const std::string& path, ModelConfig& out) {
  const EncodingTraits* owner = encoding_with_option(key);
  if (!owner) return false;
  if (find_encoding_option(*owner, key)->integer) {
    int64_t value = 0;
    read_value(v, path, value);
    out.encoding_options[key] = static_cast<double>(value);
  } else {
    double value = 0;
    read_value(v, path, value);
    out.encoding_options[key] = value;
  }
  return true;
}

}  // namespace txl::config_keys
