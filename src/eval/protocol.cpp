// The registry of evaluation protocols and what their plans share.
#include "txl/eval/protocol.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>

#include "txl/config/encodings.h"
#include "txl/util/blocks.h"
#include "txl/util/error.h"
#include "txl/util/text.h"

namespace txl {

// The registered protocols, one file each in src/eval/protocols/: a new one is its file, a
// declaration here and a line in the registry.
EvalProtocol nonoverlap_protocol();  // nonoverlap.cpp
EvalProtocol sliding_protocol();     // sliding.cpp
EvalProtocol memory_protocol();      // memory.cpp

const std::vector<EvalProtocol>& eval_protocols() {
  static const std::vector<EvalProtocol> registry = {
      nonoverlap_protocol(),
      sliding_protocol(),
      memory_protocol(),
  };
  return registry;
}

const EvalProtocol& eval_protocol(const std::string& name) {
  for (const auto& p : eval_protocols()) {
    if (name == p.name) return p;
  }
  throw std::logic_error("evaluation method \"" + name + "\" is not registered");
}

std::string default_protocol_name() { return eval_protocols().front().name; }

std::vector<std::string> eval_protocol_names() {
  std::vector<std::string> names;
  for (const auto& p : eval_protocols()) names.push_back(p.name);
  return names;
}

std::string parse_protocol_name(const std::string& name, const std::string& key_path) {
  for (const auto& p : eval_protocols()) {
    if (name == p.name) return p.name;
  }
  throw InputError(key_path + " \"" + name + "\" is not valid; expected one of " +
                   join(eval_protocol_names()));
}

std::string protocol_inapplicable(const ModelConfig& model, const std::string& name) {
  const EncodingTraits& traits = encoding_traits(model.pos_encoding);
  const EvalProtocol& protocol = eval_protocol(name);
  if (protocol.needs_memory && !traits.takes_memory)
    return std::string(traits.name) + " carries no memory";
  return "";
}

EvalRequest as_trained_request(const Config& config, bool carries_memory) {
  for (const auto& p : eval_protocols()) {
    ProtocolSettings settings;
    if (p.as_trained(config.train, carries_memory, settings) != TrainingFit::kOwn) continue;
    EvalRequest r;
    r.protocol = p.name;
    r.length = config.train.tgt_len;
    r.settings = settings;
    r.precision = config.train.precision;
    return r;
  }
  throw std::logic_error("no evaluation method is a run's own");
}

std::pair<int64_t, int64_t> shard_block(int64_t count, const EvalRequest& r) {
  return contiguous_block(count, r.shard, r.shards);
}

PassPlan plan_windows(const std::vector<PassRow>& all, const EvalRequest& request) {
  const auto [w0, w1] = shard_block(static_cast<int64_t>(all.size()), request);
  const int64_t per_batch =
      std::max<int64_t>(1, request.batch_tokens / std::max<int64_t>(1, request.length));
  PassPlan plan;
  for (int64_t i = w0; i < w1;) {
    EvalPass pass;
    int64_t j = i;
    while (j < w1 && static_cast<int64_t>(pass.rows.size()) < per_batch &&
           all[j].len == all[i].len) {
      pass.rows.push_back(all[j]);
      ++j;
    }
    plan.passes.push_back(std::move(pass));
    i = j;
  }
  return plan;
}

EvalRequest whole_evaluation(const EvalRequest& request) {
  EvalRequest whole = request;
  whole.shard = 0;
  whole.shards = 1;
  return whole;
}

EvalPassShape largest_planned_pass(const PassPlan& plan) {
  EvalPassShape s;
  for (const auto& pass : plan.passes) {
    s.batch = std::max<int64_t>(s.batch, static_cast<int64_t>(pass.rows.size()));
    for (const auto& row : pass.rows) s.queries = std::max(s.queries, row.len);
  }
  s.keys = s.queries;
  return s;
}

std::string window_memory_hint(const EvalPassShape& pass) {
  return pass.batch > 1 ? "evaluate shorter lengths or lower eval.batch_tokens of the run"
                        : "evaluate shorter lengths";
}

std::string describe_window_pass(const EvalPassShape& pass) {
  return fmt::format("{} window{} of {} tokens", pass.batch, pass.batch == 1 ? "" : "s",
                     pass.queries);
}

}  // namespace txl
