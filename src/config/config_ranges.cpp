// The numeric keys' ranges (config_ranges.h) and the refusal of a value outside one.
#include "txl/config/config_ranges.h"

#include <cmath>
#include <stdexcept>

#include "txl/config/config.h"
#include "txl/util/error.h"
#include "txl/util/json.h"

namespace txl {

namespace {

KeyRange at_least(const char* path, double min, const char* note = "") {
  return {path, min, false, std::nullopt, false, note};
}

KeyRange above(const char* path, double min) { return {path, min, true, std::nullopt, false, ""}; }

KeyRange between(const char* path, double min, double max, bool max_exclusive = false,
                 const char* note = "") {
  return {path, min, false, max, max_exclusive, note};
}

// "in [0, 1)", ">= 1" or "a finite number > 0": the range as a refusal states it.
std::string range_text(const KeyRange& r, bool integer) {
  std::string text;
  if (r.max) {
    text = std::string("in ") + (r.min_exclusive ? "(" : "[") + shown_number(r.min) + ", " +
           shown_number(*r.max) + (r.max_exclusive ? ")" : "]");
  } else {
    text = std::string(integer ? "" : "a finite number ") + (r.min_exclusive ? "> " : ">= ") +
           shown_number(r.min);
  }
  return *r.note ? text + " (" + r.note + ")" : text;
}

bool in_range(const KeyRange& r, double value) {
  if (!std::isfinite(value)) return false;
  if (r.min_exclusive ? !(value > r.min) : !(value >= r.min)) return false;
  return !r.max || (r.max_exclusive ? value < *r.max : value <= *r.max);
}

const KeyRange& range_of(const std::string& path) {
  const KeyRange* r = find_key_range(path);
  if (!r) throw std::logic_error("config key " + path + " has no range in config_ranges.cpp");
  return *r;
}

}  // namespace

const std::vector<KeyRange>& key_ranges() {
  static const std::vector<KeyRange> ranges = {
      at_least("data.min_freq", 1),
      at_least("data.max_vocab", 0),
      between("data.vocab_size", 0, static_cast<double>(kMaxSubwordVocab)),
      at_least("model.n_layer", 1),
      at_least("model.d_model", 1),
      at_least("model.n_head", 1),
      at_least("model.d_head", 1),
      at_least("model.d_inner", 1),
      between("model.dropout", 0, 1, true),
      between("model.dropatt", 0, 1, true),
      at_least("model.clamp_len", 0),
      at_least("model.max_rel_dist", 1),
      above("model.init_std", 0),
      above("model.adaptive.cutoffs[]", 0),
      at_least("model.adaptive.div_val", 1),
      at_least("train.tgt_len", 1),
      at_least("train.tgt_len_max", 0, "0 = fixed segments"),
      at_least("train.mem_len", 0),
      at_least("train.batch_size", 1),
      at_least("train.max_steps", 1),
      above("train.lr", 0),
      at_least("train.warmup_steps", 0),
      between("train.min_lr_ratio", 0, 1),
      at_least("train.weight_decay", 0),
      at_least("train.clip", 0, "0 = off"),
      // Seeds are read as unsigned 64-bit numbers: a negative one would wrap to another seed.
      at_least("train.seed", 0),
      at_least("train.log_interval", 1),
      at_least("train.eval_interval", 0),
      at_least("train.eval_max_tokens", 0),
      between("train.threads", 0, static_cast<double>(kMaxThreads), false, "0 = all cores"),
      at_least("train.probe_interval", 1),
      at_least("train.probe_max_tokens", 1),
      at_least("eval.lengths[]", 1),
      at_least("eval.batch_tokens", 1),
  };
  return ranges;
}

const KeyRange* find_key_range(const std::string& path) {
  for (const KeyRange& r : key_ranges()) {
    if (path == r.path) return &r;
  }
  return nullptr;
}

void check_key_range(const std::string& path, int64_t value, const std::string& shown) {
  const KeyRange& r = range_of(path);
  if (in_range(r, static_cast<double>(value))) return;
  throw InputError((shown.empty() ? path : shown) + " (" + std::to_string(value) + ") must be " +
                   range_text(r, true));
}

void check_key_range(const std::string& path, double value, const std::string& shown) {
  const KeyRange& r = range_of(path);
  if (in_range(r, value)) return;
  throw InputError((shown.empty() ? path : shown) + " (" + txl::shown(value) + ") must be " +
                   range_text(r, false));
}

const char* device_name_pattern() { return "^(?:cpu|auto|cuda|cuda:[0-9]{1,4})$"; }

}  // namespace txl
