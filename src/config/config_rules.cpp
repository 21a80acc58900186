// validate(): every range and relation a configuration must satisfy, named by key path.
#include <cmath>
#include <string>
#include <unordered_map>

#include "txl/config/config.h"
#include "txl/config/config_ranges.h"
#include "txl/config/encodings.h"
#include "txl/util/error.h"
#include "txl/util/json.h"
#include "txl/util/text.h"

namespace txl {

namespace {

using nlohmann::json;

// model.clamp_len and model.max_rel_dist are read by some encodings only. Every run's
// config.json records them (at their defaults for the others), so only a value other than
// the default is refused: it would be silently ignored.
void check_shared_keys(const ModelConfig& model, const EncodingTraits& traits) {
  const ModelConfig defaults;
  const auto refuse = [&](const char* key, int64_t value, int64_t fallback,
                          bool EncodingTraits::*reads) {
    throw InputError("model." + std::string(key) + " (" + std::to_string(value) +
                     ") is read by pos_encoding " + join(encoding_names_where(reads)) +
                     ", but model.pos_encoding is " + traits.name +
                     ", which ignores it; remove the key (or set it to its default, " +
                     std::to_string(fallback) + ") or change the encoding");
  };
  if (!traits.uses_clamp_len && model.clamp_len != defaults.clamp_len)
    refuse("clamp_len", model.clamp_len, defaults.clamp_len, &EncodingTraits::uses_clamp_len);
  if (!traits.uses_max_rel_dist && model.max_rel_dist != defaults.max_rel_dist) {
    refuse("max_rel_dist", model.max_rel_dist, defaults.max_rel_dist,
           &EncodingTraits::uses_max_rel_dist);
  }
}

// Options belong to the chosen encoding and lie in their ranges (and satisfy the encoding's
// own rule); memory needs an encoding that takes it.
void validate_encoding(const ModelConfig& model, const TrainConfig& train) {
  const EncodingTraits& traits = encoding_traits(model.pos_encoding);
  for (const auto& [key, value] : model.encoding_options) {
    const EncodingOption* option = find_encoding_option(traits, key);
    if (!option) {
      const EncodingTraits* owner = encoding_with_option(key);
      std::vector<std::string> own;
      for (const auto& o : traits.options) own.emplace_back(o.key);
      throw InputError("model." + key + " is an option of pos_encoding " +
                       (owner ? std::string(owner->name) : std::string("(none)")) +
                       ", but model.pos_encoding is " + traits.name +
                       "; remove the key or change the encoding (" + traits.name +
                       "'s options: " + (own.empty() ? std::string("none") : join(own)) + ")");
    }
    if (!(value >= option->min && value <= option->max)) {
      throw InputError("model." + key + " (" + shown_number(value) + ") must be in [" +
                       shown_number(option->min) + ", " + shown_number(option->max) +
                       "] for pos_encoding " + traits.name);
    }
  }
  check_shared_keys(model, traits);
  if (traits.check != nullptr) {
    if (const std::string why = traits.check(model, train); !why.empty()) throw InputError(why);
  }
  if (train.same_length && (!traits.takes_memory || train.mem_len < 1)) {
    throw InputError(
        "train.same_length makes every query attend over the last train.mem_len keys, so it "
        "needs an encoding that takes memory (" +
        join(encoding_names_where(&EncodingTraits::takes_memory)) +
        ") and train.mem_len >= 1; model.pos_encoding is " + traits.name + ", train.mem_len " +
        std::to_string(train.mem_len) + "; set train.same_length to false");
  }
  if (!traits.takes_memory && train.mem_len != 0) {
    throw InputError("model.pos_encoding " + json(traits.name).dump() +
                     " requires train.mem_len = 0, got " + std::to_string(train.mem_len) + ": " +
                     traits.name + " position encoding has no memory; set train.mem_len=0");
  }
}

bool is_subword(TokenizerKind kind) {
  return kind == TokenizerKind::kBpe || kind == TokenizerKind::kUnigram;
}

void validate_data(const DataConfig& data) {
  if (data.dir.empty()) {
    throw InputError("data.dir is empty; set it to the folder with train.txt, valid.txt, test.txt");
  }
  check_key_range("data.min_freq", data.min_freq);
  check_key_range("data.max_vocab", data.max_vocab);
  const std::string tokenizer = to_string(data.tokenizer);
  if (is_subword(data.tokenizer)) {
    if (data.vocab_size == 0) {
      throw InputError("data.vocab_size is not set; the " + tokenizer +
                       " tokenizer needs it (for example 8000; at least 256 byte pieces, <unk>, "
                       "<eos> and the training split's characters)");
    }
    if (data.vocab_size < 1) check_key_range("data.vocab_size", data.vocab_size);
    if (data.vocab_size > kMaxSubwordVocab) {
      throw InputError("data.vocab_size (" + std::to_string(data.vocab_size) + ") is too large; " +
                       "expected at most " + std::to_string(kMaxSubwordVocab));
    }
  } else if (data.vocab_size != 0) {
    throw InputError("data.vocab_size (" + std::to_string(data.vocab_size) +
                     ") applies to the bpe and unigram tokenizers, not " + tokenizer +
                     (data.tokenizer == TokenizerKind::kWord
                          ? " (a word vocabulary is cut with data.max_vocab)"
                          : " (a " + tokenizer + " vocabulary is every " +
                                (data.tokenizer == TokenizerKind::kByte ? "byte" : "character") +
                                " of the training split)"));
  }
}

void validate_model(const ModelConfig& model) {
  check_key_range("model.n_layer", model.n_layer);
  check_key_range("model.d_model", model.d_model);
  check_key_range("model.n_head", model.n_head);
  check_key_range("model.d_head", model.d_head);
  check_key_range("model.d_inner", model.d_inner);
  check_key_range("model.dropout", model.dropout);
  check_key_range("model.dropatt", model.dropatt);
  check_key_range("model.clamp_len", model.clamp_len);
  check_key_range("model.max_rel_dist", model.max_rel_dist);
  check_key_range("model.init_std", model.init_std);
  // Heads split d_model evenly; compared by division so huge values cannot overflow.
  if (model.d_model % model.n_head != 0 || model.d_model / model.n_head != model.d_head) {
    int64_t product = 0;
    const bool overflow = __builtin_mul_overflow(model.n_head, model.d_head, &product);
    throw InputError("model.d_model (" + std::to_string(model.d_model) +
                     ") must equal model.n_head * model.d_head (" + std::to_string(model.n_head) +
                     " * " + std::to_string(model.d_head) +
                     (overflow ? " overflows 64 bits" : " = " + std::to_string(product)) + ")");
  }
}

void validate_train(const TrainConfig& train) {
  check_key_range("train.tgt_len", train.tgt_len);
  if (train.tgt_len_max != 0 && train.tgt_len_max < train.tgt_len) {
    throw InputError("train.tgt_len_max (" + std::to_string(train.tgt_len_max) +
                     ") must be 0 (fixed segments) or at least train.tgt_len (" +
                     std::to_string(train.tgt_len) + ")");
  }
  check_key_range("train.mem_len", train.mem_len);
  check_key_range("train.batch_size", train.batch_size);
  check_key_range("train.max_steps", train.max_steps);
  check_key_range("train.lr", train.lr);
  check_key_range("train.warmup_steps", train.warmup_steps);
  check_key_range("train.min_lr_ratio", train.min_lr_ratio);
  check_key_range("train.weight_decay", train.weight_decay);
  check_key_range("train.clip", train.clip);
  check_key_range("train.seed", train.seed);
  check_key_range("train.log_interval", train.log_interval);
  check_key_range("train.eval_interval", train.eval_interval);
  check_key_range("train.eval_max_tokens", train.eval_max_tokens);
  check_key_range("train.probe_interval", train.probe_interval);
  check_key_range("train.probe_max_tokens", train.probe_max_tokens);
  check_key_range("train.threads", train.threads);
  if (!is_device_name(train.device)) {
    throw InputError("train.device (\"" + train.device +
                     "\") is not a device; expected cpu, cuda, cuda:N (N = 0, 1, ...) or auto");
  }
}

void validate_eval(const EvalConfig& eval) {
  if (eval.lengths.empty()) {
    throw InputError("eval.lengths is empty; list at least one window length, e.g. [128]");
  }
  // Each length is a whole evaluation; a study lists about ten. Checked first, so a list of
  // a million costs nothing to refuse.
  if (eval.lengths.size() > kMaxEvalLengths) {
    throw InputError("eval.lengths lists " + std::to_string(eval.lengths.size()) +
                     " lengths; at most " + std::to_string(kMaxEvalLengths) +
                     " (each length is a whole evaluation)");
  }
  std::unordered_map<int64_t, size_t> first_at;  // length -> its first index
  for (size_t i = 0; i < eval.lengths.size(); ++i) {
    const std::string path = "eval.lengths[" + std::to_string(i) + "]";
    check_key_range("eval.lengths[]", eval.lengths[i], path);
    const auto [seen, added] = first_at.emplace(eval.lengths[i], i);
    if (!added) {
      throw InputError(path + " (" + std::to_string(eval.lengths[i]) + ") repeats eval.lengths[" +
                       std::to_string(seen->second) + "]; list each length once");
    }
  }
  parse_eval_split(eval.split, "eval.split");
  check_key_range("eval.batch_tokens", eval.batch_tokens);
}

}  // namespace

// The sections in file order, except that the encoding's rules (which read model and train)
// come after train's ranges: the first rule broken is the one reported.
void validate(const Config& config) {
  validate_data(config.data);
  validate_model(config.model);
  validate_train(config.train);
  validate_encoding(config.model, config.train);
  validate_adaptive(config.model.adaptive, config.model.d_model, to_string(config.data.tokenizer),
                    config.data.tokenizer == TokenizerKind::kWord);
  validate_eval(config.eval);
}

}  // namespace txl
