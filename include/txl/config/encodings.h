// The position encodings' traits: everything config validation, the CLI, `txl encodings`,
// `txl bench` and the memory estimate need to know about an encoding, without torch.
// Each encoding's traits lie beside the modules that compute it, in
// src/model/encodings/<name>_traits.cpp (torch-free, built into txl_base); the modules are
// built by its factory in src/model/encodings/<name>.cpp. config/encoding_list.h names them
// all, one line per encoding, and the enum, this registry and the factory table come from it.
//
// Adding an encoding: its own files (src/model/encodings/<name>_traits.cpp, the module
// <name>.cpp with <name>_factory(), its header in include/txl/model/encodings/) and one line
// in encoding_list.h. Every consumer and every registry-driven test reads these tables
// instead of naming encodings.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "txl/config/config.h"

namespace txl {

// Ways to stretch an encoding past its training length at evaluation (txl eval --aid).
//   pi            RoPE positions x 1/s (position interpolation)
//   ntk           RoPE base b' = b * s^(D/(D-2))
//   yarn          RoPE NTK-by-parts (alpha 1, beta 32) and attention temperature 0.1 ln s + 1
//   dynamic_ntk   ntk, dynamic_yarn: yarn, with s from the keys of each pass, max(1, K/L)
//   dynamic_yarn
//   interpolate   learned_absolute: the position table read at positions x 1/s (linear)
// s is --aid-factor, or (0) derived: max(1, evaluated length / training length).
enum class ExtrapolationAid { kNone, kPi, kNtk, kYarn, kDynamicNtk, kDynamicYarn, kInterpolate };

std::string to_string(ExtrapolationAid aid);
ExtrapolationAid parse_extrapolation_aid(const std::string& name, const std::string& key_path);
std::vector<std::string> extrapolation_aid_names();
bool is_dynamic(ExtrapolationAid aid);

// An aid factor written as text ("4", "2.5" after "aid:"): the number when it is a finite
// s >= 1, nullopt for anything else (the caller names where it came from).
std::optional<double> parse_aid_factor(const std::string& text);

// s for one pass: `factor` when > 0; else derived from the evaluated length (dynamic aids:
// the pass's keys) over the training length, at least 1. For interpolate, train_len is the
// number of trained rows of the table and s maps positions 0..length-1 onto them.
double aid_scale(ExtrapolationAid aid, double factor, int64_t length, int64_t key_len,
                 int64_t train_len);

// A numeric option of one encoding: a key of the "model" section only that encoding reads.
struct EncodingOption {
  const char* key;       // JSON key in "model", unique across encodings, e.g. "rope_base"
  double default_value;  //
  double min, max;       // inclusive range
  bool integer;          // must be a whole number (stored as double, written as integer)
  const char* doc;
  bool shapes = false;  // sets a parameter's shape: fine-tuning (--init-from) must keep it
};

// What position information costs per token beyond attention's q.k and p.v, in
// multiply-accumulates (see bench.h's formula): `score` per layer and query over K keys,
// `table` once per pass shared by the batch (already divided by B*Q), `table_train` the
// FLOPs per table MAC in training (4: constant input, 6: learned input).
struct PositionCost {
  double score = 0.0;
  double table = 0.0;
  double table_train = 4.0;
};

struct EncodingTraits {
  PosEncoding id;
  const char* name;        // model.pos_encoding value
  const char* formula;     // one line: what the encoding adds, for `txl encodings` and the README
  bool takes_memory;       // distance-based: works with train.mem_len > 0 and --method memory
  bool uses_clamp_len;     // model.clamp_len / --clamp-len caps its distances
  bool uses_max_rel_dist;  // reads model.max_rel_dist
  const char* length_limit_key;         // option that caps the positions it can encode
                                        // (nullptr: none)
  std::vector<EncodingOption> options;  // its own "model" keys
  std::vector<ExtrapolationAid> aids;   // what --aid accepts beside none
  // Parameters it adds per layer (beside q, k, v, out, LayerNorm) and once per model.
  double (*layer_parameters)(const ModelConfig& c);
  double (*model_parameters)(const ModelConfig& c);
  // Cost per token for batch B, query length Q, K keys (per layer: the caller sums layers).
  PositionCost (*cost)(const ModelConfig& c, double batch, double query_len, double key_len);
  // What its options must satisfy together, or with the training shape, beyond each one's
  // range: "" when they do, else the message naming the keys (nullptr: no such rule).
  std::string (*check)(const ModelConfig& c, const TrainConfig& t);
};

// Every encoding, in the order `txl encodings`, bench and the tests list them.
const std::vector<EncodingTraits>& encoding_registry();
const EncodingTraits& encoding_traits(PosEncoding encoding);
std::vector<std::string> encoding_names();
// The names of the encodings whose traits set `flag`, e.g. &EncodingTraits::uses_clamp_len.
std::vector<std::string> encoding_names_where(bool EncodingTraits::*flag);

// The encoding whose option `key` is, or nullptr when no encoding has that option.
const EncodingTraits* encoding_with_option(const std::string& key);
const EncodingOption* find_encoding_option(const EncodingTraits& traits, const std::string& key);

// The value of an option of c.pos_encoding: the configured one or its default.
// Asking for a key the encoding does not have is a programming error (std::logic_error).
double encoding_option(const ModelConfig& c, const std::string& key);
int64_t encoding_option_int(const ModelConfig& c, const std::string& key);

// The longest sequence of positions the model can encode (INT64_MAX when unlimited).
int64_t position_limit(const ModelConfig& c);

}  // namespace txl
