// Evaluation protocols: what `--method NAME` scores, with which context, in which passes.
// The word: the user names one a method (--method, a study's eval.methods, the report's
// method column) and the registry's messages say "evaluation method"; "protocol" is the
// code's name for the same thing (EvalProtocol, its registry), never a second idea.
//
// A protocol is one file in src/eval/protocols/ plus one line in the registry
// (src/eval/protocol.cpp). It declares everything its consumers need, so that none of them
// names a protocol or one of its settings:
//   - name, one-line description and cost (txl eval --help, txl protocols, reports);
//   - its settings, each declared once by named parts (SettingDeclaration): flag, study key,
//     range, default, and how the cache, the reports and the JSON show it
//     (protocol_settings.cpp derives them); the rules between its settings and the length.
//     Code that reads a setting by name uses the constant of eval/protocols/<name>.h;
//   - how it relates to the way a run trains (validation and the bench ask it);
//   - which runs it applies to (memory);
//   - its plan of passes: which windows of the split each forward pass holds and which of
//     their positions are scored. evaluate(), the memory estimate and sharding all read the
//     plan instead of redoing its arithmetic;
//   - its note on per-position buckets, its memory hint.
//
// Shapes: a pass is R rows of one length W; row r reads inputs ids[start, start + W) and
// targets ids[start + 1, start + W + 1), positions before `skip` being context only.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "txl/config/config.h"
#include "txl/eval/eval_request.h"

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
  int64_t keep_memory = 0;  // with carries_memory: positions of memory each pass hands on
  int64_t key_window = 0;   // > 0: every query attends over this many most recent keys
};

// A setting a protocol reads, declared once in the protocol's file (with SettingDeclaration
// below, never positionally). Everything else is derived from the declaration
// (protocol_settings.cpp): the command-line option and its range check (other methods refuse
// the flag), the study key and its check, the resolved value, the cache key and file name,
// the report's settings column, the study label and the JSON.
struct ProtocolSetting {
  const char* name = nullptr;  // its key in ProtocolSettings, the cache key and JSON ("mem_len")
  const char* flag = nullptr;  // command-line option ("--mem-len")
  bool is_switch = false;      // a flag without a value: 0 or 1 (--same-length)
  int64_t min = 0, max = 0;    // the range of a value given
  int64_t unset = 0;           // the value when not given (a study may write it: "mem_lens": [-1])
  // The number an unset value stands for at length L (stride: L/2; mem_len: L); nullptr: the
  // unset value is itself the value (streams: 16).
  int64_t (*resolve_unset)(int64_t length) = nullptr;
  const char* unset_text = nullptr;   // what the unset value means, for messages ("L/2")
  const char* unset_short = nullptr;  // and in a study label ("L": "mem=L")
  const char* study_key = nullptr;    // key of a study's "eval" section (nullptr: not offered)
  bool study_list = false;            // that key takes a list: one protocol per value ("mem_lens")
  const char* report = nullptr;       // its part of the settings column, fmt with the value ("x{}")
  const char* study_label =
      nullptr;  // its part of a study protocol's label ("mem{}"; nullptr: none)
  const char* cache_tag =
      nullptr;                // its part of the cache file's name ("M" -> "-M64"; switch "-SL")
  const char* doc = nullptr;  // help text
};

// Declares a ProtocolSetting by named parts, as LibTorch's options do (Conv2dOptions(..)
// .stride(2)), so that no two parts can be swapped unnoticed:
//
//   number_setting(kStreams, "--streams")
//       .range(1, int64_t{1} << 20).unset(16, "16", "16")
//       .report("x{}").cache_tag("B").doc("memory: parallel contiguous streams (default 16)")
//
// A switch (switch_setting) holds 0 or 1 and is off unless given. The declaration becomes the
// setting where the protocol's settings list takes it; a part every setting needs (the
// report, the cache tag, the help; a number's range and unset meaning) left out is a
// std::logic_error naming the setting and the part, raised when the registry is built.
class SettingDeclaration {
 public:
  SettingDeclaration(const char* name, const char* flag, bool is_switch);
  // The range of a value given.
  SettingDeclaration& range(int64_t min, int64_t max);
  // The value when not given, what it means in messages ("the evaluated length") and in a
  // study label ("L"), and the number it stands for at a length (nullptr: itself).
  SettingDeclaration& unset(int64_t value, const char* text, const char* short_text,
                            int64_t (*resolve)(int64_t length) = nullptr);
  // The key of a study's "eval" section that gives it: one value, or a list of values
  // making one study protocol each.
  SettingDeclaration& study_key(const char* key);
  SettingDeclaration& study_list(const char* key);
  SettingDeclaration& report(const char* format);       // "mem {}" (a switch: "same")
  SettingDeclaration& study_label(const char* format);  // "mem{}" (a switch: "same")
  SettingDeclaration& cache_tag(const char* tag);       // "M"
  SettingDeclaration& doc(const char* help);
  operator ProtocolSetting() const;  // NOLINT(google-explicit-constructor): the list takes it

 private:
  ProtocolSetting s_;
  bool has_range_ = false;
  bool has_unset_ = false;
};
inline SettingDeclaration number_setting(const char* name, const char* flag) {
  return SettingDeclaration(name, flag, false);
}
inline SettingDeclaration switch_setting(const char* name, const char* flag) {
  return SettingDeclaration(name, flag, true);
}

// How a protocol relates to the way a run trains (validation, bench's primary protocol).
enum class TrainingFit {
  kOwn,      // how the run's own validation evaluates (memory when it carries memory)
  kApplies,  // applies as well (sliding)
  kNotUsed,  // means nothing for such a run (memory with train.mem_len = 0)
};

// How a message names a setting, given its name: by its flag (flag_namer), or by a study's
// key.
using SettingNamer = std::function<std::string(const std::string& setting)>;

struct EvalProtocol {
  const char* name;         // --method value
  const char* description;  // one sentence: which windows, which positions are scored
  const char* cost;         // tokens forwarded per scored token, for the help
  const char* unit;         // what its window sums are: "window" or "segment"
  std::vector<ProtocolSetting> settings;
  bool needs_memory;  // applies only to encodings that carry memory
  // Rules between its settings and the length, on resolved settings (range checks are
  // derived): InputError naming each setting with `name`.
  void (*check)(const EvalRequest& request, const SettingNamer& name);
  // This shard's passes (request.shard of request.shards) over `targets` scored tokens.
  PassPlan (*plan)(const EvalRequest& request, int64_t targets);
  // The largest pass of the plan, or a bound on it (what the memory estimate sizes).
  EvalPassShape (*largest_pass)(const EvalRequest& request, int64_t targets);
  // Its settings as the run trains (memory: train.mem_len, train.batch_size streams,
  // train.same_length), written into `settings`, and how it fits such a run.
  TrainingFit (*as_trained)(const TrainConfig& train, bool carries_memory,
                            ProtocolSettings& settings);
  // A result's settings where they differ from the request's (memory: no more streams than
  // targets); nullptr when none do.
  void (*adjust_result)(int64_t targets, ProtocolSettings& settings);
  // What a bucket of the per-position section means under this protocol ("" = nothing).
  const char* position_note;
  // What to try when a length does not fit in memory, given the largest pass.
  std::string (*memory_hint)(const EvalPassShape& pass);
  // The largest pass in words ("2 windows of 128 tokens").
  std::string (*describe_pass)(const EvalPassShape& pass);
};

// Every protocol, in the order `txl protocols` lists them.
const std::vector<EvalProtocol>& eval_protocols();
// The registered protocol `name` (std::logic_error otherwise: names come from parse_protocol_name).
const EvalProtocol& eval_protocol(const std::string& name);
std::vector<std::string> eval_protocol_names();

// Why a protocol does not apply to a model with this config ("" when it does): one that
// needs memory on an encoding that carries none.
std::string protocol_inapplicable(const ModelConfig& model, const std::string& name);

// The protocol and settings a run's own validation evaluates with (TrainingFit::kOwn).
EvalRequest as_trained_request(const Config& config, bool carries_memory);

// Whether `request` is evaluated on a model with this config, the one decision eval,
// compare, study and bench make per length (request_check.cpp):
//   evaluated  "" is returned;
//   n/a        the reason is returned: a fact of the run that no option changes here (a
//              protocol needing memory on an encoding without it, an aid the encoding does
//              not have, a length past a learned table that --aid interpolate does not reach).
//              The length shows as n/a with it; a command with nothing left to evaluate
//              refuses with it;
//   refused    InputError naming the option: a setting to change whatever the run (a length
//              below 1, a stride past the length, --clamp-len on an encoding that ignores it).
std::string request_unavailable(const ModelConfig& model, const EvalRequest& request);

// The reasons of the n/a lengths (skipped[i] for lengths[i], "" = evaluated), each once with
// the lengths it holds for: "R1 (lengths 128, 256); R2 (length 32)".
std::string skipped_reasons(const std::vector<int64_t>& lengths,
                            const std::vector<std::string>& skipped);

// Why a window of `window` positions does not fit the model's learned position table ("" when
// it does, or when the encoding has none): the rule request_unavailable applies to lengths and
// the probes and bench apply to their windows.
std::string window_past_table(const ModelConfig& model, int64_t window);

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

// What the declared settings give (src/eval/protocol_settings.cpp) --------------------------

// The declaration of `name` in `protocol`; nullptr when it has none.
const ProtocolSetting* find_setting(const EvalProtocol& protocol, const std::string& name);
// Names a setting of `protocol` by its flag ("--stride").
SettingNamer flag_namer(const EvalProtocol& protocol);
// Every setting of the request's protocol, present and resolved at its length: a default for
// what is absent or unset (stride: L/2, mem_len: L, streams: 16).
ProtocolSettings resolved_settings(const EvalRequest& request);
// The value `name` has in `settings` resolved at `length` (an absent one: its default).
int64_t resolved_setting(const EvalProtocol& protocol, const ProtocolSettings& settings,
                         const std::string& name, int64_t length);
// Every value of `settings` that is a setting of `protocol` (the others are ignored, as the
// request's fields a protocol does not read are) lies in its range (or, with accept_unset,
// its unset value: a study writes "mem_lens": [-1]): InputError naming the setting with
// `name` otherwise. The command line accepts no unset value: a default is asked for by
// leaving the flag out.
void check_setting_ranges(const EvalProtocol& protocol, const ProtocolSettings& settings,
                          const SettingNamer& name, bool accept_unset);
// A request's settings against its protocol: the ranges (check_setting_ranges), then the
// protocol's own rules on the resolved values. InputError naming the setting with `name`.
void check_request_settings(const EvalRequest& request, const SettingNamer& name,
                            bool accept_unset);
// The protocol's part of a cache key ({"stride": 32}; a switch only when on) and of the cache
// file's name ("-S32", "-M64-B16-SL"), from the key.
void add_settings_to_key(const EvalProtocol& protocol, const ProtocolSettings& resolved,
                         nlohmann::json& key);
std::string settings_file_part(const EvalProtocol& protocol, const nlohmann::json& key);
// A result's settings in JSON ({"mem_len": 64, "streams": 16, "same_length": false}) and back.
nlohmann::json settings_to_json(const EvalProtocol& protocol, const ProtocolSettings& settings);
ProtocolSettings settings_from_json(const EvalProtocol& protocol, const nlohmann::json& j);
// The report's settings column: "stride 32", "mem 64 x16 same", "-" for none.
std::string settings_text(const EvalProtocol& protocol, const ProtocolSettings& settings);
// A setting's part of a study protocol's label (" mem64", " mem=L", " same"; "" for none):
// a listed value when the list holds several or it is not the unset one, a switch when on.
std::string study_label_part(const ProtocolSetting& setting, int64_t value, bool several);

}  // namespace txl
