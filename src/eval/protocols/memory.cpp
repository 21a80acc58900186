// memory: Transformer-XL's protocol. The split is cut into `streams` contiguous streams
// (batch rows); each is read in segments of L tokens with up to mem_len positions of memory
// carried from its previous segment, and every token is scored once. Stream b scores
// targets [b*T, (b+1)*T) for T = targets / streams; the last stream also takes the
// remainder and goes on alone once the others are done.
#include "txl/eval/protocols/memory.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>

#include "txl/eval/protocol.h"
#include "txl/model/transformer.h"
#include "txl/util/error.h"

namespace txl {

namespace {

using memory_setting::kMemLen;
using memory_setting::kSameLength;
using memory_setting::kStreams;

int64_t setting(const EvalRequest& r, const char* name) {
  return resolved_setting(eval_protocol(r.protocol), r.settings, name, r.length);
}

int64_t stream_count(const EvalRequest& r, int64_t targets) {
  return std::max<int64_t>(1, std::min(setting(r, kStreams), targets));
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
  plan.keep_memory = setting(r, kMemLen);
  plan.key_window = same_length_key_window(setting(r, kSameLength) != 0, plan.keep_memory);
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

// --mem-len, --streams and --same-length (protocol.h: SettingDeclaration).
std::vector<ProtocolSetting> memory_settings() {
  return {
      number_setting(kMemLen, "--mem-len")
          .range(0, int64_t{1} << 40)
          .unset(-1, "the evaluated length", "L", [](int64_t length) { return length; })
          .study_list("mem_lens")
          .report("mem {}")
          .study_label("mem{}")
          .cache_tag("M")
          .doc("memory: memory length, >= 0 (0 = none; default: the evaluated length)"),
      number_setting(kStreams, "--streams")
          .range(1, int64_t{1} << 20)
          .unset(16, "16", "16")
          .report("x{}")
          .cache_tag("B")
          .doc("memory: parallel contiguous streams (default 16; 1 = one stream, slowest)"),
      switch_setting(kSameLength, "--same-length")
          .study_key("same_length")
          .report("same")
          .study_label("same")
          .cache_tag("SL")
          .doc("memory: every query attends over the same mem_len most recent keys, as the "
               "Transformer-XL paper evaluates (same_length)"),
  };
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
  p.settings = memory_settings();
  p.needs_memory = true;
  p.check = [](const EvalRequest& r, const SettingNamer& name) {
    if (r.settings.get(kSameLength) && r.settings.get(kMemLen) < 1) {
      throw InputError(fmt::format(
          "{} makes every query attend over the last mem_len keys, so it needs {} >= 1, got {}",
          name(kSameLength), name(kMemLen), r.settings.get(kMemLen)));
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
    s.keys = s.queries + std::min(setting(r, kMemLen), last_len);
    return s;
  };
  p.as_trained = [](const TrainConfig& train, bool carries_memory, ProtocolSettings& s) {
    s.set(kMemLen, train.mem_len);
    s.set(kStreams, train.batch_size);
    s.set(kSameLength, train.same_length ? 1 : 0);
    return carries_memory && train.mem_len > 0 ? TrainingFit::kOwn : TrainingFit::kNotUsed;
  };
  p.adjust_result = [](int64_t targets, ProtocolSettings& s) {
    s.set(kStreams, std::min(s.get(kStreams), targets));
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
