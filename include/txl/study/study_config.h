// A study: one base config, a grid of config keys with lists of values (every combination is
// a cell, trained into its own run directory), and how every cell is evaluated.
//
//   {"base": "configs/kjv-char-relative.json",           (a path, or the config inline)
//    "grid": {"model.pos_encoding": ["relative", "rope"], "train.seed": [1, 2, 3]},
//    "eval": {"split": "valid", "methods": ["nonoverlap", "sliding"],
//             "lengths": [32, 64, 128, 256, 512], "stride": 0, "mem_lens": [-1],
//             "aids": ["none"], "max_tokens": 0, "checkpoint": "last",
//             "probes": {"copy": {"distances": [32, 64]}, "passkey": {}, "seed": 1}},
//    "baseline": "relative"}           (optional; an encoding of the grid, default the first)
//
// The grid must hold model.pos_encoding and train.seed; any key `txl train --set` accepts may
// be added. A cell is named from its values ("rope-seed2", "rope-tgt_len128-seed2"); the
// cells that differ only in train.seed form a group, the unit the statistics compare. Each
// group is compared with the baseline encoding's group at the same values of the other keys
// (rope-tgt_len128 with relative-tgt_len128), so only the encoding differs in a comparison. An
// encoding without memory (absolute, ...) trains with train.mem_len = 0 unless the grid sets
// train.mem_len itself; the cell's overrides then list "train.mem_len=0".
// Parsing is strict: unknown keys, empty or duplicated lists, a grid key --set refuses or a
// cell whose config does not validate throw InputError naming the file and the key.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "txl/config/config.h"
#include "txl/eval/request.h"
#include "txl/probe/probe.h"

namespace txl {

struct GridAxis {
  std::string key;                     // section.key
  std::vector<nlohmann::json> values;  // as written in the study config
};

// One way every cell is evaluated: a method with its settings and an aid.
struct StudyProtocol {
  std::string label;  // "nonoverlap", "sliding", "memory mem64", "nonoverlap+yarn"
  EvalSettings settings;
};

struct StudyEval {
  std::string split = "valid";
  std::vector<std::string> methods = {default_protocol_name()};
  std::vector<int64_t> lengths;  // empty in the file: the base config's eval.lengths
  // The protocols' settings the section gives, by setting name (protocol.h: "stride": [0],
  // "mem_len": [-1, 64] from "mem_lens", a list making one protocol per value; a switch 0
  // or 1); absent: the protocol's default.
  std::map<std::string, std::vector<int64_t>> protocol_settings;
  std::vector<std::string> aids = {"none"};  // "none", "yarn", "ntk:4" (aid[:factor])
  int64_t max_tokens = 0;                    // 0 = the whole split
  std::string checkpoint = "last";           // last | best
  // Probes of context use run on every cell (probe/probe.h): {"copy": {}, "recl": {...}}.
  ProbeRequest probes;
};

struct StudyCell {
  std::string name;      // "rope-seed2"
  std::string group;     // "rope": the name without the seed
  std::string encoding;  // the model.pos_encoding value
  std::string variant;   // the other keys' part of the name ("tgt_len128"; "" without others)
  int64_t seed = 0;
  std::vector<std::string> overrides;  // "model.pos_encoding=rope", ... (as --set takes them)
  Config config;                       // base + overrides, validated
};

struct StudySpec {
  std::string source;          // the study config's path, for messages
  std::string base_path;       // the base config's file ("" when given inline)
  nlohmann::json base;         // the base config as given (before the grid)
  std::vector<GridAxis> grid;  // model.pos_encoding first, train.seed last, others by key
  StudyEval eval;
  std::string baseline;                  // group name; "" = the first group
  std::vector<StudyCell> cells;          // every combination, pos_encoding outermost
  std::vector<std::string> groups;       // in cell order, each once
  std::vector<StudyProtocol> protocols;  // methods x aids (x mem_lens for memory)
};

// Parses and checks a study config; `threads` (when > 0) becomes every cell's train.threads.
StudySpec study_from_json(const nlohmann::json& j, const std::string& source, int64_t threads = 0);
StudySpec read_study(const std::string& path, int64_t threads = 0);

// What a study directory records of its spec (study.json) and checks a re-run against: the
// resolved base config, the grid and the evaluation block.
nlohmann::json study_manifest(const StudySpec& spec);

// The evaluation block as the manifest and every cell file record it (the protocols follow
// from it).
nlohmann::json study_eval_json(const StudyEval& eval);

// The protocols' labels, in order.
std::vector<std::string> protocol_labels(const StudySpec& spec);

// Whether the cell of this name has results that a change would orphan (a checkpoint or an
// evaluation); null: every cell counts as having them.
using CellHasResults = std::function<bool(const std::string& cell)>;

// Why `now` cannot continue the study recorded in `saved` (empty when it can): changes to
// the base config (other than train.threads), to the evaluation or to the grid's keys, or a
// grid value removed while a cell with it has results. Values added to the grid only add
// cells; a value whose cells never trained (one a refused or failed cell held) may go.
std::vector<std::string> study_differences(const nlohmann::json& saved, const nlohmann::json& now,
                                           const CellHasResults& has_results = nullptr);

// The names of the cells of `grid` whose value on axis `axis` is `value`, as
// study_from_json names them.
std::vector<std::string> cell_names_with(const std::vector<GridAxis>& grid, size_t axis,
                                         const nlohmann::json& value);

const StudyCell* find_cell(const StudySpec& spec, const std::string& name);

// The group `group` is compared with: the baseline encoding's at the same other values.
std::string baseline_group(const StudySpec& spec, const std::string& group,
                           const std::string& baseline);

}  // namespace txl
