// Evaluation results as a printed table and as JSON (the machine-readable form).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "txl/eval/evaluate.h"
#include "txl/eval/interval.h"
#include "txl/run/run_dir.h"

namespace txl {

// Which weights were scored, as every output that shows a run says it (eval's report, each
// column of a comparison), written by one function.
struct RunIdentity {
  std::string encoding;      // model.pos_encoding
  int64_t train_length = 0;  // train.tgt_len, marked in tables
  std::string checkpoint;    // checkpoint file name, e.g. best.pt
  int64_t checkpoint_step = 0;
  std::string origin;  // describe_origin (run_dir.h): "imported from ..." / "fine-tuned from ..."
};
RunIdentity identify_run(const LoadedRun& run, const std::string& checkpoint_file);
// {"encoding", "train_length", "checkpoint", "checkpoint_step", "origin"} added to `j`.
void add_run_identity(nlohmann::json& j, const RunIdentity& id);

struct EvalReport {
  std::string run;    // run directory
  std::string split;  // valid | test
  RunIdentity identity;
  std::string tokenizer;            // char | byte | word | bpe | unigram
  std::string precision = "fp32";   // fp32 | bf16 (--precision): in the JSON and the table
  std::vector<EvalResult> results;  // per length (with --text: the total over the documents)
  // With --text: each file, its tokens and <unk>s, and its own result per length.
  struct Document {
    std::string file;
    int64_t tokens = 0, unknown = 0;
    std::vector<EvalResult> results;
  };
  std::vector<Document> documents;
  std::vector<bool> cached;  // per result: read from RUN/eval-cache (may be empty)
  // Per result: why its length is n/a, its result then empty ("" or absent = evaluated).
  std::vector<std::string> skipped;
  BootstrapOptions bootstrap;
  bool per_position = false;  // show mean NLL per window position (bucketed)
  // The split's UTF-8 bytes over its tokens (0 = unknown): turns bits per token into bits
  // per byte, the unit that stays comparable across tokenizers.
  double bytes_per_token = 0;
};

// Bits per byte from bits per token: the total bits over the split's bytes (exact when the
// whole split is scored; otherwise at the split's average bytes per token).
double bits_per_byte(double bits_per_token, double bytes_per_token);

// One sentence naming a method and its settings, e.g. "sliding: windows of 128 advanced by 64, ..."
std::string describe_method(const EvalResult& result);

// The per-result settings column: "-", "stride 64", "mem 128 x1".
std::string method_setting(const EvalResult& result);

// Perplexity summary of one result with its interval, as JSON:
// {"method", "length", "window" (longest_window), "stride"?, "mem_len"?, "streams"?,
//  "tokens", "windows", "nll",
//  "nll_sum", "ppl", "ppl_lo", "ppl_hi" (null with < 2 windows), "bpc"?, "bpc_lo"?, "bpc_hi"?,
//  "bpb"?, "bpb_lo"?, "bpb_hi"? (with bytes_per_token > 0)}
nlohmann::json summary_to_json(const EvalResult& result, bool chars,
                               const BootstrapOptions& bootstrap, double bytes_per_token = 0);

// "" when a result's windows are as long as its length; otherwise one sentence saying that
// the split (or --max-tokens) is shorter, so the row scores windows of at most N tokens.
std::string short_window_note(const EvalResult& result);

// {"bucket_start": [...], "bucket_tokens": [...], "mean_nll": [...]}
nlohmann::json per_position_to_json(const EvalResult& result);

// "  L=256: [0,16) 2.31 | [16,32) 1.95 | ..." (one line)
std::string format_per_position(const EvalResult& result);

// The heading of a per-position section, with what the buckets mean for this method.
std::string per_position_heading(const std::string& method);

// {"run", "split", "encoding", "tokenizer", "train_length", "checkpoint", "checkpoint_step",
//  "interval": {...}, "results": [summary + "cached" + "per_position"?, or {"length",
//  "skipped": why} for a length that is n/a]}
nlohmann::json report_to_json(const EvalReport& report);

std::string format_report_table(const EvalReport& report);

}  // namespace txl
