// The range of each numeric configuration key that has one of its own, stated once:
// validate() checks values against it (config_rules.cpp) and the JSON Schema states it
// (config_schema.h), so the two cannot disagree. Rules between keys (d_model = n_head *
// d_head, tgt_len_max 0 or >= tgt_len, a subword tokenizer's vocab_size) stay in
// config_rules.cpp; an encoding's own keys carry their range in the encodings' registry.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace txl {

struct KeyRange {
  const char* path;  // "model.dropout"; "eval.lengths[]" for every item of a list
  double min = 0;
  bool min_exclusive = false;
  std::optional<double> max;
  bool max_exclusive = false;
  const char* note = "";  // said after the range in a refusal: "0 = off"
};

// Every range, in the order of the key tables.
const std::vector<KeyRange>& key_ranges();

// The range of `path`, or nullptr.
const KeyRange* find_key_range(const std::string& path);

// InputError "PATH (VALUE) must be >= 1" (integers), "... must be a finite number > 0",
// "... must be in [0, 1)" (numbers), with the note in brackets, when `value` lies outside
// the range of `path` (`shown` names the key in the message: "eval.lengths[3]"). A path
// without a range is a programming error (std::logic_error).
void check_key_range(const std::string& path, int64_t value, const std::string& shown = "");
void check_key_range(const std::string& path, double value, const std::string& shown = "");

// The most items of a list key: eval.lengths (each length is a whole evaluation).
inline constexpr size_t kMaxEvalLengths = 1000;
// data.vocab_size's bound: far above the vocabularies subword models use (8k-256k).
inline constexpr int64_t kMaxSubwordVocab = 1'000'000;

// The names train.device takes, as a regular expression (ECMAScript): cpu, auto, cuda, cuda:N.
const char* device_name_pattern();

}  // namespace txl
