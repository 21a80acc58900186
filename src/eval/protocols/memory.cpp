// memory: Transformer-XL's protocol. The split is cut into `streams` contiguous streams
// (batch rows); each is read in segments of L tokens with up to mem_len positions of memory
// carried from its previous segment, and every token is scored once. Stream b scores
// targets [b*T, (b+1)*T) for T = targets / streams; the last stream also takes the
// remainder and goes on alone once the others are done.
#include <spdlog/fmt/fmt.h>

#include <algorithm>

#include "txl/eval/protocol.h"
#include "txl/util/error.h"

namespace txl {

namespace {

int64_t setting(const EvalRequest& r, const char* name) {
  return resolved_setting(eval_protocol(r.protocol), r.settings, name, r.length);
}

int64_t stream_count(const EvalRequest& r, int64_t targets) {
  return std::max<int64_t>(1, std::min(setting(r, "streams"), targets));
}

// Segment-major: every stream's segment at one offset forms a pass; the shard takes the
// streams [b0, b1), and memory holds their rows in that order.
PassPlan memory_plan(const EvalRequest& r, int64_t targets) {
  const int64_t streams = stream_count(r, targets);
  const int64_t per = targets / streams;
  const int64_t last_len = targets - per * (streams - 1);
  const auto [b0, b1] = shard_block(streams, r);
  PassPlan plan;
  plan.carries_memory = true;
  plan.keep_memory = setting(r, "mem_len");
  plan.key_window = setting(r, "same_length") ? plan.keep_memory : 0;
  for (int64_t pos = 0; pos < last_len;) {
    const bool all_streams = pos < per;
    const int64_t len = std::min(r.length, (all_streams ? per : last_len) - pos);
    const int64_t first = std::max(all_streams ? 0 : streams - 1, b0);
    EvalPass pass;
    for (int64_t b = first; b < b1; ++b) pass.rows.push_back({b * per + pos, len, 0});
    if (!pass.rows.empty()) plan.passes.push_back(std::move(pass));
    pos += len;
  }
  return plan;
}

}  // namespace

EvalProtocol memory_protocol() {
  EvalProtocol p;
  p.name = "memory";
  p.description =
      "segments of L tokens with up to mem_len tokens of memory carried across the segments "
      "of each stream; every token scored once";
  p.cost = "1 token forwarded per token scored, attending over L + mem_len keys";
  p.unit = "segment";
  p.settings = {{"mem_len", "--mem-len", false, 0, int64_t{1} << 40, -1,
                 [](int64_t length) { return length; }, "the evaluated length", "L", "mem_lens",
                 true, "mem {}", "mem{}", "M",
                 "memory: memory length, >= 0 (0 = none; default: the evaluated length)"},
                {"streams", "--streams", false, 1, int64_t{1} << 20, 16, nullptr, "16", "16",
                 nullptr, false, "x{}", nullptr, "B",
                 "memory: parallel contiguous streams (default 16; 1 = one stream, slowest)"},
                {"same_length", "--same-length", true, 0, 1, 0, nullptr, "off", "off",
                 "same_length", false, "same", "same", "SL",
                 "memory: every query attends over the same mem_len most recent keys, as the "
                 "Transformer-XL paper evaluates (same_length)"}};
  p.needs_memory = true;
  p.check = [](const EvalRequest& r, const SettingNamer& name) {
    if (r.settings.get("same_length") && r.settings.get("mem_len") < 1) {
      throw InputError(fmt::format(
          "{} makes every query attend over the last mem_len keys, so it needs {} >= 1, got {}",
          name("same_length"), name("mem_len"), r.settings.get("mem_len")));
    }
  };
  p.plan = memory_plan;
  // A bound: all streams at once, the last (longest) stream's segment, with full memory.
  p.largest_pass = [](const EvalRequest& r, int64_t targets) {
    EvalPassShape s;
    const int64_t streams = stream_count(r, targets);
    const int64_t last_len = targets - (targets / streams) * (streams - 1);
    s.batch = streams;
    s.queries = std::min(r.length, last_len);
    s.keys = s.queries + std::min(setting(r, "mem_len"), last_len);
    return s;
  };
  p.as_trained = [](const TrainConfig& train, bool carries_memory, ProtocolSettings& s) {
    s.set("mem_len", train.mem_len);
    s.set("streams", train.batch_size);
    s.set("same_length", train.same_length ? 1 : 0);
    return carries_memory && train.mem_len > 0 ? TrainingFit::kOwn : TrainingFit::kNotUsed;
  };
  p.adjust_result = [](int64_t targets, ProtocolSettings& s) {
    s.set("streams", std::min(s.get("streams"), targets));
  };
  p.position_note = "positions within each segment, memory before them";
  p.memory_hint = [](const EvalPassShape&) {
    return std::string("evaluate shorter lengths, or use fewer --streams or a shorter --mem-len");
  };
  p.describe_pass = [](const EvalPassShape& pass) {
    return fmt::format("{} streams x {} tokens with {} of memory", pass.batch, pass.queries,
                       pass.keys - pass.queries);
  };
  return p;
}

}  // namespace txl
