// Evaluation protocols: what `--method NAME` scores, with which context, in which passes.
//
// A protocol is one file in src/eval/protocols/ plus one line in the registry
// (src/eval/protocol.cpp) and one EvalMethod value (evaluate.h). It declares everything its
// consumers need, so that none of them names a protocol:
//   - name, one-line description and cost (txl eval --help, txl protocols, reports);
//   - the options it reads, each with its one rule (flags of another protocol are refused);
//   - which runs it applies to (memory);
//   - its plan of passes: which windows of the split each forward pass holds and which of
//     their positions are scored. evaluate(), the memory estimate and sharding all read the
//     plan instead of redoing its arithmetic;
//   - its part of the cache key, and its rows in the report, the JSON and the plots.
//
// Shapes: a pass is R rows of one length W; row r reads inputs ids[start, start + W) and
// targets ids[start + 1, start + W + 1), positions before `skip` being context only.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "txl/eval/eval_memory.h"
#include "txl/eval/evaluate.h"

namespace txl {

// One row of a pass: a window of the split, scored from `skip` on.
struct PassRow {
  int64_t start = 0;  // first input token
  int64_t len = 0;    // W: inputs (= targets) in the window
  int64_t skip = 0;   // positions 0..skip-1 are context, scored by an earlier row
};

// One forward pass: rows of equal length. With `carries_memory`, the memory of the previous
// pass comes in (its last rows.size() rows: a pass with fewer rows continues the last ones).
struct EvalPass {
  std::vector<PassRow> rows;
};

// What one shard of an evaluation forwards, in order.
struct PassPlan {
  std::vector<EvalPass> passes;
  bool carries_memory = false;
};

// A command-line option a protocol reads; other protocols refuse it.
struct ProtocolOption {
  const char* flag;       // e.g. "--stride"
  const char* study_key;  // key of a study's "eval" section (nullptr: not offered there)
  const char* doc;        // help text
};

struct EvalProtocol {
  EvalMethod id;
  const char* name;         // --method value
  const char* description;  // one sentence: which windows, which positions are scored
  const char* cost;         // tokens forwarded per scored token, for the help
  const char* unit;         // what its window sums are: "window" or "segment"
  std::vector<ProtocolOption> options;
  bool needs_memory;  // applies only to encodings that carry memory
  // The rules of its own options against the request (InputError naming the flag).
  void (*check)(const EvalRequest& request);
  // This shard's passes (request.shard of request.shards) over `targets` scored tokens.
  PassPlan (*plan)(const EvalRequest& request, int64_t targets);
  // The largest pass of the plan, or a bound on it (what the memory estimate sizes).
  EvalPassShape (*largest_pass)(const EvalRequest& request, int64_t targets);
  // Its settings in a result (stride, mem_len, streams) from the request.
  void (*fill_result)(const EvalRequest& request, int64_t targets, EvalResult& result);
  // Its settings in the cache key ({"stride", "mem_len", "streams"}) and the file name part.
  void (*cache_key)(const EvalRequest& request, nlohmann::json& key);
  // The settings column of a report row ("-", "stride 64", "mem 128 x16").
  std::string (*setting)(const EvalResult& result);
  // Its settings in a JSON result row.
  void (*json_row)(const EvalResult& result, nlohmann::json& row);
  // What a bucket of the per-position section means under this protocol ("" = nothing).
  const char* position_note;
  // What to try when a length does not fit in memory, given the largest pass.
  std::string (*memory_hint)(const EvalPassShape& pass);
  // The largest pass in words ("2 windows of 128 tokens").
  std::string (*describe_pass)(const EvalPassShape& pass);
};

// Every protocol, in the order `txl protocols` lists them.
const std::vector<EvalProtocol>& eval_protocols();
const EvalProtocol& eval_protocol(EvalMethod method);
std::vector<std::string> eval_protocol_names();

// Why a protocol does not apply to a model with this config ("" when it does): one that
// needs memory on an encoding that carries none.
std::string method_unavailable(const ModelConfig& model, EvalMethod method);

// Why `request` cannot be evaluated on a model with this config at all ("" when it can):
// method_unavailable, an aid the encoding does not
// have, a length past a learned table without the interpolate aid. The one place every
// consumer (eval, compare, study) asks.
std::string protocol_unavailable(const ModelConfig& model, const EvalRequest& request);

// Shared by the protocols' plans: the block [first, end) of `count` units (windows or
// streams) that the request's shard takes.
std::pair<int64_t, int64_t> shard_block(int64_t count, const EvalRequest& request);
// The shard's windows, consecutive windows of equal length grouped batch_tokens / L a pass.
PassPlan plan_windows(const std::vector<PassRow>& windows, const EvalRequest& request);
// The request as the whole evaluation (shard 0 of 1): what the memory estimate sizes.
EvalRequest whole_evaluation(const EvalRequest& request);
// The largest pass of a plan: rows, window, and keys = window (+ memory when carried).
EvalPassShape largest_planned_pass(const PassPlan& plan);

// The windows' protocols' hint and pass description ("2 windows of 128 tokens").
std::string window_memory_hint(const EvalPassShape& pass);
std::string describe_window_pass(const EvalPassShape& pass);

}  // namespace txl
