// The training loop's state that a checkpoint carries, and its one table of fields: the
// checkpoint's meta JSON is written and read from the table, and a resume restores exactly
// the table's progress fields. A field added to TrainState but not to the table fails the
// build (train_state.cpp checks the count with aggregate_field_count).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

namespace txl {

struct TrainState {
  int64_t step = 0;  // optimizer steps done (skipped non-finite steps included)
  int64_t tokens_seen = 0;
  int64_t stream_position = 0;  // StreamBatcher::position() for the next step
  double best_valid_ppl = 0.0;  // 0 = none yet
  nlohmann::json config;        // the resolved config
  uint64_t vocab_checksum = 0;
  double lr = 0.0;            // learning rate of the last step (the schedule's position)
  int64_t skipped_steps = 0;  // non-finite steps skipped under train.skip_nonfinite
  // Fingerprint of the training split, so a resume on an edited corpus is refused instead of
  // silently reading other data at the saved stream position.
  int64_t train_tokens = 0;
  uint64_t train_checksum = 0;
  // The progress line in progress when the checkpoint was taken, so that a resumed run logs
  // the same interval means as an uninterrupted one.
  double interval_loss_sum = 0.0;
  int64_t interval_steps = 0;   // steps in the interval (for ms/step)
  int64_t interval_finite = 0;  // of which had a finite loss (for the mean loss)
  double interval_seconds = 0.0;
  // Processes that trained it (data-parallel ranks); a resume needs as many. Checkpoints
  // written before this field existed read as 1.
  int64_t world_size = 1;
};

// What a resume does with a field: progress comes back from the checkpoint; identity (what
// the run is: its config, vocabulary and training split) is computed afresh from the run
// directory and compared with the checkpoint's (a difference refuses the resume).
enum class StateRole { kProgress, kIdentity };

struct TrainStateField {
  const char* section;  // nested object in the meta JSON ("interval"), or nullptr: top level
  const char* key;
  StateRole role;
  // int64_t: a count (negative is malformed); uint64_t: written as decimal text, because
  // JSON readers elsewhere may hold numbers as doubles; json: copied as it is.
  std::variant<int64_t TrainState::*, double TrainState::*, uint64_t TrainState::*,
               nlohmann::json TrainState::*>
      member;
  bool absent_is_default = false;  // a meta JSON without the key keeps the default
};

// Every field of TrainState, once, in declaration order.
const std::vector<TrainStateField>& train_state_fields();

// Adds every field to `meta` (an object).
void write_train_state(const TrainState& state, nlohmann::json& meta);

// Reads every field from `meta`; throws std::exception (nlohmann's, or invalid_argument
// naming the key) when one is missing or malformed.
TrainState read_train_state(const nlohmann::json& meta);

// Copies the progress fields of `saved` into `into`, leaving its identity fields.
void restore_progress(TrainState& into, const TrainState& saved);

}  // namespace txl
