// Evaluation results cached in the run directory, so that `txl compare` (and a repeated
// `txl eval`) reuses them instead of evaluating again:
//
//   RUN/eval-cache/<split>-<method>-L<length>...-<checkpoint>-step<N>.json
//     {"key": {...}, "result": {...}, "digest": "..."}
//
// The key names everything the numbers depend on: split and a checksum of its token ids,
// method, length, effective stride / mem_len / streams / clamp_len, max_tokens, precision,
// position buckets, and the checkpoint file with its step and a checksum of its bytes. A
// file is reused only when its key equals the request's key exactly, its digest matches its
// content and its numbers hold together (a damaged entry is evaluated again, with a
// warning naming it); a retrained run (new checkpoint bytes) or an edited corpus therefore
// never reads stale numbers. Only eval-cache/ is written: the checkpoint, config and
// vocabulary are never modified.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "txl/eval/evaluate.h"
#include "txl/run/run_dir.h"

namespace txl {

// FNV-1a 64 over a file's bytes / over token ids (identify checkpoints and splits).
uint64_t checksum_file(const std::string& path);
uint64_t checksum_ids(const std::vector<int32_t>& ids);

// Everything about the evaluated data and weights that is not in the request.
struct EvalSubject {
  std::string split;
  uint64_t split_checksum = 0;
  std::string checkpoint;  // file name inside the run, e.g. best.pt
  int64_t checkpoint_step = 0;
  uint64_t checkpoint_checksum = 0;
};
// The subject of a loaded run: `which` is its --checkpoint choice, `ids` the split's tokens.
EvalSubject identify_subject(const LoadedRun& run, const std::string& which,
                             const std::string& split, const std::vector<int32_t>& ids);
// {"split", "split_checksum", "checkpoint", "checkpoint_step", "checkpoint_checksum"}: in
// every cache key, and what the shards of one probe merge must share.
nlohmann::json subject_to_json(const EvalSubject& subject);

nlohmann::json eval_cache_key(const EvalSubject& subject, const ModelConfig& model,
                              const EvalRequest& request);
std::string eval_cache_path(const std::string& run_dir, const nlohmann::json& key);

// The full result, window sums included (they feed intervals and paired differences).
nlohmann::json result_to_json(const EvalResult& result);
// Throws on malformed input and on numbers that do not hold together: windows that do not
// add up to the total, a negative or non-finite NLL, position buckets that count otherwise.
EvalResult result_from_json(const nlohmann::json& j);

// nullopt when the file is missing, holds another key (another checkpoint, split or
// request), or is damaged: not JSON, an entry whose digest does not match its content or
// whose numbers do not hold together; then `damage` (when given) says which.
std::optional<EvalResult> read_eval_cache(const std::string& path, const nlohmann::json& key,
                                          std::string* damage = nullptr);
// Atomic write; returns an error message instead of throwing (a read-only run directory
// must not fail an evaluation), empty on success.
std::string write_eval_cache(const std::string& path, const nlohmann::json& key,
                             const EvalResult& result);

// Evaluates a loaded run on one split through the cache.
class CachedEvaluator {
 public:
  // `which` is the --checkpoint choice the run was loaded with; `ids` must outlive this.
  // read_cache = false evaluates every request again (and refreshes the cache).
  CachedEvaluator(LoadedRun& run, const std::string& which, const std::string& split,
                  const std::vector<int32_t>& ids, bool read_cache);

  // Returns the cached result when reading is allowed and the key matches; otherwise
  // evaluates and stores the result.
  // `progress` as for txl::evaluate (not called for a cached result).
  EvalResult evaluate(const EvalRequest& request, bool* was_cached = nullptr,
                      const EvalProgressFn& progress = {});
  const EvalSubject& subject() const { return subject_; }

 private:
  LoadedRun& run_;
  const std::vector<int32_t>& ids_;
  EvalSubject subject_;
  bool read_cache_;
};

}  // namespace txl
