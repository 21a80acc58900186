// Evaluation results as a printed table and as JSON (the machine-readable form).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "txl/eval/evaluate.h"

namespace txl {

struct EvalReport {
  std::string run;         // run directory
  std::string split;       // valid | test
  std::string encoding;    // model.pos_encoding
  std::string tokenizer;   // char | word
  int64_t train_length = 0;  // train.tgt_len, marked in tables
  int64_t checkpoint_step = 0;
  std::vector<EvalResult> results;
};

// {"run", "split", "method", "encoding", "tokenizer", "train_length", "checkpoint_step",
//  "results": [{"length", "tokens", "nll" (mean per token), "nll_sum", "ppl", "bpc"?, ...}]}
nlohmann::json report_to_json(const EvalReport& report);

std::string format_report_table(const EvalReport& report);

}  // namespace txl
