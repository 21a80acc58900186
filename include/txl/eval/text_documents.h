// What `txl eval` and `txl compare` score: a split, or the user's own files (--text), each a
// document scored on its own (no memory crosses from one to the next) and their total. One
// copy of reading the files and of scoring the documents at a length, for both commands.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "txl/data/token_cache.h"
#include "txl/data/tokenizer.h"
#include "txl/eval/evaluate.h"
#include "txl/eval/per_token.h"
#include "txl/run/run_dir.h"

namespace txl {

// A text scored as one document: the split (file "", label the split's name) or a --text
// file (label "text-" and its tokens' checksum: the cache knows a text by its content, never
// by its file's name).
struct TextDocument {
  std::string file;  // as given ("-" = standard input), "" for the split
  std::string label;
  std::vector<int32_t> ids;
  EncodeStats stats;
};

// The checks --text takes before any run is read: not beside --split, standard input once.
// InputError naming the option.
void check_text_options(const std::vector<std::string>& texts, const std::string& split);

// Every file read with `vocab` (load_text: InputError naming a missing, empty, unreadable or
// too short one), in order; `total` adds up their tokens, <unk>s and bytes.
std::vector<TextDocument> load_text_documents(const std::vector<std::string>& files,
                                              const Vocab& vocab, EncodeStats* total,
                                              TokenCacheWrites* writes);

// The documents' tokens joined in order: the one token stream the probes read (probe.h).
std::vector<int32_t> joined_ids(const std::vector<TextDocument>& documents);

// `r`'s windows after `total`'s: the total over documents scored one after the other (an
// empty `total` becomes `r`). Per-position buckets are merged by the window position they
// start at, so every token of either is counted.
void add_result(EvalResult& total, const EvalResult& r);

// One run's score of every document at one request: the total and each document's own.
struct DocumentScores {
  EvalResult total;
  std::vector<EvalResult> each;  // per document, in order
  bool cached = true;            // every document's result was read from the run's cache
  std::string checkpoint;        // the checkpoint file scored (RunIdentity::checkpoint)
};

// Scores the documents one after the other through the run's cache (`which`: the
// --checkpoint choice; `read_cache` false evaluates again), with a progress line named
// `name` and the file. With `per_token`, every document is evaluated (never read from the
// cache) and its token scores are appended there (they point at the documents' ids).
DocumentScores score_documents(LoadedRun& run, const std::string& which,
                               std::vector<TextDocument>& documents, const EvalRequest& request,
                               bool read_cache, const std::string& name,
                               std::vector<PerTokenScores>* per_token = nullptr);

// Above this share of <unk>, a perplexity says more about the vocabulary than the model.
inline constexpr double kUnkWarning = 0.05;
// The warning line for a file with more than kUnkWarning of its tokens scored as <unk>, ""
// otherwise.
std::string unknown_warning(const std::string& file, int64_t tokens, int64_t unknown);

}  // namespace txl
