// The configuration tree: one JSON file with sections data, model, train, eval.
//
// Every key but data.dir has a default (documented next to it and in the README's table; a
// run's config.json holds every key, resolved). Parsing rejects unknown keys and wrong
// types; validation names the key path, the value and what is allowed, e.g.
//   model.d_model (500) must equal model.n_head * model.d_head (4 * 64 = 256)
// All such errors are txl::InputError (exit code 2).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "txl/config/adaptive.h"
#include "txl/util/json.h"

namespace txl {

// The most threads train.threads and every --threads accept: far above any CPU this runs on,
// so a larger number is a typo, not a machine. 0 means all cores.
inline constexpr int64_t kMaxThreads = 1024;

enum class TokenizerKind { kChar, kWord, kBpe, kUnigram, kByte };
// One value per line of encoding_list.h, in its order.
enum class PosEncoding {
#define TXL_ENCODING(id, name) id,
#include "txl/config/encoding_list.h"
};
enum class Precision { kFp32, kBf16 };

// Names as they appear in JSON; parse_* throw InputError listing the valid names.
// The splits an evaluation may score (train is for training only) and the checkpoint it
// loads: their names go through the same tables as the other enums.
enum class EvalSplit { kValid, kTest };
enum class CheckpointChoice { kBest, kLast };

std::string to_string(EvalSplit split);
std::string to_string(CheckpointChoice choice);
EvalSplit parse_eval_split(const std::string& name, const std::string& key_path);
CheckpointChoice parse_checkpoint_choice(const std::string& name, const std::string& key_path);

std::string to_string(TokenizerKind kind);
std::string to_string(PosEncoding encoding);
std::string to_string(Precision precision);
TokenizerKind parse_tokenizer_kind(const std::string& name, const std::string& key_path);
PosEncoding parse_pos_encoding(const std::string& name, const std::string& key_path);
Precision parse_precision(const std::string& name, const std::string& key_path);

// Device names (train.device, --device; platform/device.h resolves them on a machine): cpu,
// cuda, cuda:N, auto. device_cuda_index: N of cuda:N, -1 for cuda, -2 for anything else.
bool is_device_name(const std::string& name);
int device_cuda_index(const std::string& name);

struct DataConfig {
  std::string dir;  // required: folder with train.txt, valid.txt, test.txt
  // "char" (code points) | "byte" (bytes, no <eos>: enwik8, text8) | "word" (whitespace +
  // <eos>) | "bpe" | "unigram" (subwords trained by sentencepiece on the training split,
  // <eos> per line)
  TokenizerKind tokenizer = TokenizerKind::kChar;
  int64_t min_freq = 1;    // word: rarer training words become <unk>
  int64_t max_vocab = 0;   // word: keep the most frequent N (0 = no limit)
  int64_t vocab_size = 0;  // bpe, unigram: the vocabulary's size (required there, 0 elsewhere)
};

struct ModelConfig {
  PosEncoding pos_encoding = PosEncoding::kRelative;  // one of encoding_names()
  int64_t n_layer = 4;
  int64_t d_model = 256;  // must equal n_head * d_head
  int64_t n_head = 4;
  int64_t d_head = 64;
  int64_t d_inner = 1024;      // feed-forward width
  double dropout = 0.1;        // embeddings, positions, attention output, FF
  double dropatt = 0.0;        // attention probabilities
  bool pre_norm = false;       // false: post-norm blocks as in Transformer-XL
  bool tie_weights = true;     // output layer shares the embedding matrix
  int64_t clamp_len = 0;       // relative: cap distances at this value (0 = no cap)
  int64_t max_rel_dist = 512;  // relative_learned: table of 2*max_rel_dist-1 distances
  double init_std = 0.02;      // N(0, init_std) as in the reference implementation
  // Adaptive input and softmax (config/adaptive.h); empty = one embedding and a full softmax.
  std::optional<AdaptiveConfig> adaptive;
  // The chosen encoding's own keys (config/encodings.h), e.g. "rope_base"; an absent key
  // takes its default (read them with encoding_option).
  std::map<std::string, double> encoding_options;
};

struct TrainConfig {
  int64_t tgt_len = 128;     // tokens per segment
  int64_t tgt_len_max = 0;   // > 0: each step's segment length is drawn from
                             // [tgt_len, tgt_len_max] (0: always tgt_len)
  int64_t mem_len = 128;     // memory length (must be 0 for absolute)
  bool same_length = false;  // every query attends over the same mem_len most recent keys
  int64_t batch_size = 16;   // number of contiguous streams
  int64_t max_steps = 2000;
  double lr = 5e-4;            // peak learning rate
  int64_t warmup_steps = 100;  // linear warm-up, then cosine decay
  double min_lr_ratio = 0.1;   // cosine decays to lr * min_lr_ratio
  double weight_decay = 0.0;   // AdamW decoupled weight decay
  double clip = 0.25;          // gradient-norm clip (0 = off)
  int64_t seed = 1234;
  int64_t log_interval = 20;    // steps between progress lines
  int64_t eval_interval = 200;  // steps between validations (0 = only at the end)
  int64_t eval_max_tokens = 0;  // cap on validation tokens per evaluation (0 = whole split)
  int64_t threads = 0;          // 0 = all cores
  std::string device = "cpu";   // "cpu" | "cuda" | "cuda:N" | "auto" (platform/device.h)
  Precision precision = Precision::kFp32;  // "fp32" | "bf16" (CPU autocast; weights stay fp32)
  bool skip_nonfinite = false;             // true: skip (and count) steps whose loss or gradient
                                           // norm is NaN/Inf; false: stop with a checkpoint
  // Probes during training (train/train_probes.h): "" (none), or the probe names as --probes
  // takes them, then PROBE.KEY=V[,V...] settings as --probe-set takes them, separated by
  // spaces ("copy copy.distances=16,32"), run on the validation split every probe_interval
  // steps; probe_max_tokens bounds the tokens they forward over the whole run.
  std::string probes;
  int64_t probe_interval = 100;
  double probe_max_tokens = 1e9;
};

struct EvalConfig {
  std::vector<int64_t> lengths = {64, 128, 256, 512, 1024};  // evaluated window lengths
  std::string split = "valid";                               // "valid" | "test"
  int64_t batch_tokens = 8192;  // windows per forward pass ~ batch_tokens / length
};

struct Config {
  DataConfig data;
  ModelConfig model;
  TrainConfig train;
  EvalConfig eval;
};

// Parses a whole config. `source` names where it came from (a file path) for messages.
// Missing keys take defaults; unknown keys, wrong types and invalid values throw InputError.
Config config_from_json(const nlohmann::json& j, const std::string& source);

// The resolved configuration with every key, as written to a run directory.
nlohmann::json config_to_json(const Config& config);

// read_json_file (reads a config file): util/json.h, included above.

// Applies one "--set a.b.c=value" override to a JSON tree before parsing.
// The value is read as JSON when it parses as JSON (numbers, true/false, [..]) and as a
// string otherwise. The key path must name an existing config key.
void apply_override(nlohmann::json& j, const std::string& assignment);

// `base` (read from `source`, a file name for messages) with the --set `overrides` applied,
// parsed and validated. An error about a key an override set is reported as that
// override's ("--set model.rope_base=-1 (over cfg.json): model.rope_base (-1) must be ..."),
// not the file's, which does not hold that value; any other error names `source`.
Config config_with_overrides(nlohmann::json base, const std::vector<std::string>& overrides,
                             const std::string& source);

// Checks cross-field rules and ranges; throws InputError naming the key path and value.
// Also called by config_from_json. Does not touch the file system.
void validate(const Config& config);

}  // namespace txl
