// Trained weights in and out of txl: a run exported as .safetensors or a torch.save dict for
// Python (with its config and vocabulary beside it), and weights trained elsewhere imported
// into a run directory that eval, compare, sample and the probes read like any other.
//
// Export writes, for --out DIR/NAME.safetensors (or NAME.pt):
//   NAME.safetensors  the weights; __metadata__ holds "txl_config" (the run's config.json),
//                     "txl_names" (txl | reference), "txl_run", "txl_step"
//   NAME.config.json  the run's config (import --config reads it)
//   NAME.vocab.txt    one token per line in id order; a backslash, a line end, a carriage
//                     return and a tab in a token are written \\ \n \r \t
// Import writes a run directory: config.json, vocab.json, checkpoint.pt (weights only, step 0)
// and origin.json (the file imported, its XXH64, the names, the time).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "txl/data/vocab.h"
#include "txl/run/weight_names.h"

namespace txl {

struct ExportOptions {
  std::string run_dir;
  std::string out;  // ends in .safetensors or .pt
  WeightNaming naming = WeightNaming::kTxl;
  std::string checkpoint = "best";  // best | last
  bool force = false;               // replace existing output files
};

struct ExportResult {
  std::string weights, config, vocab;  // the files written
  std::string checkpoint;              // the checkpoint read (best.pt, or checkpoint.pt)
  int64_t tensors = 0;
  int64_t step = 0;
  double bytes = 0;  // of the weight file
};

// InputError (nothing written) for: an extension other than .safetensors / .pt, an output
// file that exists (without `force`) or is a file of the run, what the names cannot express.
ExportResult export_run(const ExportOptions& options);

struct ImportOptions {
  std::string weights;  // .safetensors or a torch.save zip (.pt)
  std::string vocab;    // vocab.txt (one token per line) or a run's vocab.json
  std::string config;   // a txl config (the export's NAME.config.json, or written by hand)
  std::string run_dir;
  std::string naming = "auto";  // txl | reference | auto (the file's txl_names, else by names)
  bool force = false;
  bool allow_nonfinite = false;
};

struct ImportResult {
  WeightNaming naming = WeightNaming::kTxl;
  int64_t tensors = 0;
  int64_t parameters = 0;
  uint64_t file_hash = 0;  // XXH64 of the weight file
};

// Every check before anything is written: a config, vocabulary or weight file that is bad
// (weight_names.h and safetensors.h list how), a vocabulary whose size differs from the
// embedding's, NaN or Inf in a tensor (named; allowed with allow_nonfinite), a non-empty run
// directory without `force`. InputError, nothing written.
ImportResult import_run(const ImportOptions& options);

// vocab.txt both ways (the escapes above). Reading: an empty line, a token twice or a bad
// escape is an InputError naming the line; a vocabulary without <unk> is refused, because txl
// maps words it has never seen to it.
std::string vocab_text(const Vocab& vocab);
Vocab read_vocab_text(const std::string& path, TokenizerKind kind);

// Now in UTC as origin.json records it: "2026-01-31T12:00:00Z".
std::string utc_now();

}  // namespace txl
