// memory: Transformer-XL's protocol. The split is cut into `streams` contiguous streams
// (batch rows); each is read in segments of L tokens with up to mem_len positions of memory
// carried from its previous segment, and every token is scored once. Stream b scores
// targets [b*T, (b+1)*T) for T = targets / streams; the last stream also takes the
// remainder and goes on alone once the others are done.
#include <spdlog/fmt/fmt.h>

#include <algorithm>

#include "txl/eval/protocols/protocols.h"
#include "txl/util/error.h"

namespace txl {

namespace {

int64_t stream_count(const EvalRequest& r, int64_t targets) {
  return std::max<int64_t>(1, std::min(r.streams, targets));
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
  p.id = EvalMethod::kMemory;
  p.name = "memory";
  p.description =
      "segments of L tokens with up to mem_len tokens of memory carried across the segments "
      "of each stream; every token scored once";
  p.cost = "1 token forwarded per token scored, attending over L + mem_len keys";
  p.unit = "segment";
  p.options = {{"--mem-len", "mem_lens",
                "memory: memory length, >= 0 (0 = none; default: the evaluated length)"},
               {"--streams", nullptr,
                "memory: parallel contiguous streams (default 16; 1 = one stream, slowest)"},
               {"--same-length", "same_length",
                "memory: every query attends over the same mem_len most recent keys (the "
                "paper's evaluation; Transformer-XL's same_length)"}};
  p.needs_memory = true;
  p.check = [](const EvalRequest& r) {
    if (r.mem_len < 0) throw InputError("--mem-len must be >= 0, got " + std::to_string(r.mem_len));
    if (r.streams < 1) throw InputError("--streams must be >= 1, got " + std::to_string(r.streams));
    if (r.same_length && r.mem_len < 1) {
      throw InputError(
          "--same-length makes every query attend over the last mem_len keys, so it "
          "needs --mem-len >= 1, got " +
          std::to_string(r.mem_len));
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
    s.keys = s.queries + std::min(r.mem_len, last_len);
    return s;
  };
  p.fill_result = [](const EvalRequest& r, int64_t targets, EvalResult& result) {
    result.mem_len = r.mem_len;
    result.streams = std::min(r.streams, targets);
    result.same_length = r.same_length;
  };
  p.cache_key = [](const EvalRequest& r, nlohmann::json& key) {
    key["stride"] = 0;
    key["mem_len"] = r.mem_len;
    key["streams"] = r.streams;
    if (r.same_length) key["same_length"] = true;  // absent: entries from before it still count
  };
  p.setting = [](const EvalResult& e) {
    return fmt::format("mem {} x{}{}", e.mem_len, e.streams, e.same_length ? " same" : "");
  };
  p.json_row = [](const EvalResult& e, nlohmann::json& row) {
    row["mem_len"] = e.mem_len;
    row["streams"] = e.streams;
    row["same_length"] = e.same_length;
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
