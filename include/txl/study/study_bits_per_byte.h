// Bits per byte in a study: the unit in which groups of different tokenizers (a grid over
// data.tokenizer or data.vocab_size) can stand side by side, where perplexities count
// different tokens. A group's bits per byte is its perplexity estimate seen through
// log2(ppl) / bytes_per_token (a monotone map, so the interval maps with it).
#pragma once

#include <string>

#include "txl/study/study_config.h"
#include "txl/study/study_stats.h"

namespace txl {

// The estimate in bits per byte; a copy without value when bytes_per_token is unknown (0).
Estimate bits_per_byte_estimate(const Estimate& ppl, double bytes_per_token);

// True when the groups' tokens are not all the same unit (tokenizer or bytes per token).
bool tokens_differ(const StudyStats& stats);

// "- Tokens: bpe, 3.412 UTF-8 bytes per token ..." for "What was run"; "" when unknown.
std::string tokens_summary(const StudyStats& stats);

// The "Bits per byte" table of one protocol (groups side by side), for report.md.
std::string bits_per_byte_table(const StudySpec& spec, const StudyStats& stats, size_t protocol);

}  // namespace txl
