// One evaluation asked for and the shape of its largest pass: the base the evaluation's
// headers share (evaluate.h, protocol.h, eval_footprint.h, request.h include it; it includes
// none of them), so that none of them includes another only for these types.
//
// ProtocolSettings: the values of an evaluation method's own settings (sliding's stride;
// memory's mem_len, streams and same_length), held by the name the method declares each one
// under (protocol.h, ProtocolSetting; the names are constants in eval/protocols/<method>.h)
// instead of as fields of every struct a request passes through. A switch holds 0 or 1. A
// setting that is absent, or holds the value its declaration calls unset, takes the method's
// default (resolved_settings, protocol.h).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>

#include "txl/config/config.h"
#include "txl/config/encodings.h"

namespace txl {

class ProtocolSettings {
 public:
  ProtocolSettings() = default;
  ProtocolSettings(std::initializer_list<std::pair<const std::string, int64_t>> values)
      : values_(values) {}

  bool has(const std::string& name) const { return values_.count(name) > 0; }
  // The value of `name`; std::logic_error when it is absent (a protocol reading a setting it
  // did not resolve).
  int64_t get(const std::string& name) const {
    const auto it = values_.find(name);
    if (it == values_.end())
      throw std::logic_error("evaluation method setting " + name + " is not set");
    return it->second;
  }
  int64_t value_or(const std::string& name, int64_t fallback) const {
    const auto it = values_.find(name);
    return it == values_.end() ? fallback : it->second;
  }
  void set(const std::string& name, int64_t value) { values_[name] = value; }
  const std::map<std::string, int64_t>& values() const { return values_; }
  bool empty() const { return values_.empty(); }
  bool operator==(const ProtocolSettings& other) const { return values_ == other.values_; }
  bool operator!=(const ProtocolSettings& other) const { return values_ != other.values_; }

 private:
  std::map<std::string, int64_t> values_;
};

// The protocol evaluation uses unless told otherwise: the registry's first (nonoverlap).
std::string default_protocol_name();
// The name of a registered protocol (protocol.h), or InputError naming `key_path` (the flag,
// or a study config's key) and the valid names.
std::string parse_protocol_name(const std::string& name, const std::string& key_path = "--method");

struct EvalRequest {
  std::string protocol = default_protocol_name();  // a registered protocol's name (protocol.h)
  int64_t length = 128;  // L: window (nonoverlap, sliding) or segment (memory) length
  // The protocol's own settings (stride; mem_len, streams, same_length): what is absent takes
  // the protocol's default (resolved_settings, protocol.h).
  ProtocolSettings settings;
  int64_t clamp_len = -1;       // relative distance cap (-1: the model's)
  int64_t batch_tokens = 8192;  // windows per pass ~ batch_tokens / L
  int64_t max_tokens = 0;       // score at most this many tokens from the start (0 = all)
  Precision precision = Precision::kFp32;
  int64_t position_buckets = 0;  // > 0: also report mean NLL per window position, bucketed
  ExtrapolationAid aid = ExtrapolationAid::kNone;  // config/encodings.h
  double aid_factor = 0.0;                         // s (0 = derived from L / train_len)
  int64_t train_len = 0;  // keys per training segment of the run (training_length)
  // Data-parallel validation: score only shard `shard` of `shards` (a contiguous block of the
  // windows, or of the memory streams), laid out exactly as the whole evaluation lays them
  // out, so the shards' NLL and token sums add up to the whole evaluation's.
  int64_t shard = 0;
  int64_t shards = 1;
};

// The largest forward pass a request makes on a split of `targets` scored tokens
// (largest_eval_pass, eval_footprint.h; a method's largest_pass, protocol.h).
struct EvalPassShape {
  int64_t batch = 0;    // windows (or streams) in one pass
  int64_t queries = 0;  // W: the longest window or segment (the length, or less on a short split)
  int64_t keys = 0;     // W plus memory
};

}  // namespace txl
