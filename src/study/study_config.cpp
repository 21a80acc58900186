#include "txl/study/study_config.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "txl/config/encodings.h"
#include "txl/eval/evaluate.h"
#include "txl/eval/protocol.h"
#include "txl/util/error.h"
#include "txl/util/text.h"

namespace txl {

namespace {

using nlohmann::json;

const std::vector<std::string> kTopKeys = {"base", "grid", "eval", "baseline"};
const std::vector<std::string> kEvalKeys = {"split",      "methods",    "lengths",
                                            "stride",     "mem_lens",   "aids",
                                            "max_tokens", "checkpoint", "probes"};
constexpr const char* kEncodingKey = "model.pos_encoding";
constexpr const char* kSeedKey = "train.seed";

void check_keys(const json& j, const std::vector<std::string>& allowed, const std::string& where) {
  if (!j.is_object()) throw InputError(where + " must be a JSON object");
  for (const auto& [key, value] : j.items()) {
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      throw InputError(where + ": unknown key \"" + key + "\"; valid keys: " + join(allowed));
    }
  }
}

int64_t read_int(const json& j, const std::string& where) {
  if (!j.is_number_integer()) throw InputError(where + " must be an integer, got " + j.dump());
  return j.get<int64_t>();
}

std::string read_string(const json& j, const std::string& where) {
  if (!j.is_string()) throw InputError(where + " must be a string, got " + j.dump());
  return j.get<std::string>();
}

// Refuses anything but a non-empty list without repeated values.
void check_list(const json& j, const std::string& where) {
  if (!j.is_array()) throw InputError(where + " must be a list, got " + j.dump());
  if (j.empty()) throw InputError(where + " is an empty list; give at least one value");
  for (size_t i = 0; i < j.size(); ++i) {
    for (size_t k = 0; k < i; ++k) {
      if (j[i] == j[k]) {
        throw InputError(where + " lists " + j[i].dump() +
                         " twice; every value must appear once (each makes its own cells)");
      }
    }
  }
}

// The value as --set writes it: strings bare, everything else as JSON.
std::string assignment_value(const json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

// A value as it appears in a cell name: letters, digits, '.', '_' and '-' kept, the rest '_'.
std::string name_part(const json& v) {
  std::string s = assignment_value(v);
  for (char& c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  }
  return s;
}

// A setting of one protocol given while the methods do not include it would be ignored in
// silence: refused, as every key a study config cannot use is. The keys are the protocols'
// own (protocol.h).
void check_method_keys(const json& j, const std::string& where, const StudyEval& e) {
  for (const auto& protocol : eval_protocols()) {
    for (const auto& option : protocol.options) {
      if (!option.study_key || !j.contains(option.study_key) ||
          std::find(e.methods.begin(), e.methods.end(), protocol.name) != e.methods.end())
        continue;
      throw InputError(fmt::format(
          "{}.{} is a setting of the {} method, which the methods ({}) do not list; add \"{}\" "
          "to the methods or remove {}",
          where, option.study_key, protocol.name, join(e.methods), protocol.name,
          option.study_key));
    }
  }
}

void read_eval_keys(const json& j, const std::string& where, StudyEval& e) {
  check_keys(j, kEvalKeys, where);
  if (j.contains("split")) {
    e.split = read_string(j["split"], where + ".split");
    parse_eval_split(e.split, where + ".split");
  }
  if (j.contains("methods")) {
    e.methods.clear();
    check_list(j["methods"], where + ".methods");
    for (const auto& m : j["methods"]) {
      const std::string name = read_string(m, where + ".methods");
      parse_eval_method(name, where + ".methods");
      e.methods.push_back(name);
    }
  }
  if (j.contains("lengths")) {
    e.lengths.clear();
    check_list(j["lengths"], where + ".lengths");
    for (const auto& v : j["lengths"]) {
      const int64_t length = read_int(v, where + ".lengths");
      if (length < 1)
        throw InputError(where + ".lengths: " + v.dump() + " is not a positive length");
      e.lengths.push_back(length);
    }
  }
  if (j.contains("stride")) {
    e.stride = read_int(j["stride"], where + ".stride");
    if (e.stride < 0)
      throw InputError(where + ".stride (" + std::to_string(e.stride) +
                       ") must be >= 1, or 0 for L/2");
  }
  if (j.contains("mem_lens")) {
    e.mem_lens.clear();
    check_list(j["mem_lens"], where + ".mem_lens");
    for (const auto& v : j["mem_lens"]) {
      const int64_t m = read_int(v, where + ".mem_lens");
      if (m < -1)
        throw InputError(where + ".mem_lens: " + v.dump() +
                         " is not valid; expected >= 0, or -1 for the evaluated length");
      e.mem_lens.push_back(m);
    }
  }
  if (j.contains("aids")) {
    e.aids.clear();
    check_list(j["aids"], where + ".aids");
    for (const auto& v : j["aids"]) e.aids.push_back(read_string(v, where + ".aids"));
  }
  if (j.contains("max_tokens")) {
    e.max_tokens = read_int(j["max_tokens"], where + ".max_tokens");
    if (e.max_tokens < 0)
      throw InputError(where + ".max_tokens must be >= 0 (0 = the whole split)");
  }
  if (j.contains("probes")) e.probes = probe_request_from_json(j["probes"], where + ".probes");
  if (j.contains("checkpoint")) {
    e.checkpoint = read_string(j["checkpoint"], where + ".checkpoint");
    parse_checkpoint_choice(e.checkpoint, where + ".checkpoint");
  }
  check_method_keys(j, where, e);
}

StudyEval parse_eval(const json& j, const std::string& where, const Config& base) {
  StudyEval e;
  e.lengths = base.eval.lengths;
  e.split = base.eval.split;
  if (!j.is_null()) read_eval_keys(j, where, e);
  std::sort(e.lengths.begin(), e.lengths.end());
  e.lengths.erase(std::unique(e.lengths.begin(), e.lengths.end()), e.lengths.end());
  if (e.stride > e.lengths.front()) {
    throw InputError(where + ".stride (" + std::to_string(e.stride) +
                     ") is longer than the shortest length " + std::to_string(e.lengths.front()) +
                     "; a sliding window advances by 1 to L tokens (0 = L/2)");
  }
  return e;
}

// "yarn" or "ntk:4" into an aid and its factor (0 = derived).
std::pair<ExtrapolationAid, double> parse_aid_spec(const std::string& spec,
                                                   const std::string& where) {
  const size_t colon = spec.find(':');
  const ExtrapolationAid aid = parse_extrapolation_aid(spec.substr(0, colon), where);
  double factor = 0.0;
  if (colon != std::string::npos) {
    const auto value = parse_aid_factor(spec.substr(colon + 1));
    if (!value) {
      throw InputError(where + ": \"" + spec +
                       "\" has no valid factor; expected aid:factor with a "
                       "factor >= 1, e.g. ntk:4, or the aid alone to derive it from the length");
    }
    factor = *value;
  }
  if (aid == ExtrapolationAid::kNone && factor != 0.0)
    throw InputError(where + ": \"" + spec + "\": the aid none takes no factor");
  return {aid, factor};
}

std::vector<StudyProtocol> make_protocols(const StudyEval& e, const std::string& where) {
  std::vector<StudyProtocol> out;
  for (const auto& aid_spec : e.aids) {
    const auto [aid, factor] = parse_aid_spec(aid_spec, where + ".aids");
    for (const auto& method_name : e.methods) {
      const EvalMethod method = parse_eval_method(method_name, where + ".methods");
      const std::vector<int64_t> mems =
          method == EvalMethod::kMemory ? e.mem_lens : std::vector<int64_t>{-1};
      for (const int64_t mem : mems) {
        StudyProtocol p;
        p.settings.method = method;
        p.settings.stride = method == EvalMethod::kSliding ? e.stride : 0;
        p.settings.mem_len = mem;
        p.settings.max_tokens = e.max_tokens;
        p.settings.aid = aid;
        p.settings.aid_factor = factor;
        p.label = method_name;
        if (method == EvalMethod::kMemory && (mem >= 0 || e.mem_lens.size() > 1))
          p.label += mem < 0 ? " mem=L" : " mem" + std::to_string(mem);
        if (aid != ExtrapolationAid::kNone) p.label += "+" + aid_spec;
        out.push_back(p);
      }
    }
  }
  return out;
}

// Grid axes in naming order: the encoding, the other keys by name, the seed.
std::vector<GridAxis> parse_grid(const json& j, const std::string& where) {
  if (!j.is_object()) throw InputError(where + " must be a JSON object of key: [values]");
  for (const char* required : {kEncodingKey, kSeedKey}) {
    if (!j.contains(required)) {
      throw InputError(where + " needs \"" + std::string(required) +
                       "\": a study compares encodings (model.pos_encoding) over seeds "
                       "(train.seed), e.g. \"train.seed\": [1, 2, 3]");
    }
  }
  std::vector<GridAxis> axes;
  axes.push_back({kEncodingKey, {}});
  for (const auto& [key, value] : j.items()) {
    if (key != kEncodingKey && key != kSeedKey) axes.push_back({key, {}});
  }
  axes.push_back({kSeedKey, {}});
  for (auto& axis : axes) {
    check_list(j[axis.key], where + "[\"" + axis.key + "\"]");
    for (const auto& v : j[axis.key]) axis.values.push_back(v);
  }
  for (const auto& v : axes.back().values) read_int(v, where + "[\"train.seed\"]");
  return axes;
}

// Advances a mixed-radix counter over the grid, the last axis fastest; false after the last.
bool next_combination(std::vector<size_t>& index, const std::vector<GridAxis>& grid) {
  for (size_t a = grid.size(); a-- > 0;) {
    if (++index[a] < grid[a].values.size()) return true;
    index[a] = 0;
  }
  return false;
}

bool grid_has(const std::vector<GridAxis>& grid, const std::string& key) {
  return std::any_of(grid.begin(), grid.end(), [&](const GridAxis& a) { return a.key == key; });
}

std::string field_of(const std::string& key) { return key.substr(key.find('.') + 1); }

// The base config, from a path or inline; returns the name its messages use.
std::string read_base(const json& j, const std::string& source, StudySpec& spec) {
  std::string base_source = source + ": base";
  if (j["base"].is_string()) {
    base_source = j["base"].get<std::string>();
    spec.base_path = base_source;
    spec.base = read_json_file(base_source);
  } else if (j["base"].is_object()) {
    spec.base = j["base"];
  } else {
    throw InputError(source + ": \"base\" must be a path to a txl config or the config inline");
  }
  return base_source;
}

// An encoding without memory cannot train with the base's memory: unless the grid sets
// train.mem_len itself, such a cell trains without (and says so in its overrides).
void drop_memory_if_memoryless(const StudySpec& spec, json& cj, StudyCell& cell) {
  if (!grid_has(spec.grid, "train.mem_len") && cj.contains("model") &&
      cj["model"].contains("pos_encoding") && cj["model"]["pos_encoding"].is_string() &&
      (!cj.contains("train") || !cj["train"].is_object() ||
       cj["train"].value("mem_len", int64_t{-1}) != 0)) {
    const std::string enc = cj["model"]["pos_encoding"];
    const auto& registry = encoding_registry();
    const auto it = std::find_if(registry.begin(), registry.end(),
                                 [&](const EncodingTraits& t) { return enc == t.name; });
    if (it != registry.end() && !it->takes_memory) {
      apply_override(cj, "train.mem_len=0");
      cell.overrides.push_back("train.mem_len=0");
    }
  }
}

// A value's part of a cell name: "seed2" for the seed, the encoding bare, "<field><value>"
// for any other key ("tgt_len128").
std::string name_part_of(const GridAxis& axis, const json& v) {
  if (axis.key == kSeedKey) return "seed" + name_part(v);
  if (axis.key == kEncodingKey) return name_part(v);
  return field_of(axis.key) + name_part(v);
}

// The cell at one combination of grid values (index[a] into axis a), named and validated.
StudyCell make_cell(const StudySpec& spec, const std::vector<size_t>& index,
                    const std::string& source) {
  StudyCell cell;
  json cj = spec.base;
  std::vector<std::string> parts, group_parts, variant_parts;
  for (size_t a = 0; a < spec.grid.size(); ++a) {
    const auto& axis = spec.grid[a];
    const json& v = axis.values[index[a]];
    const std::string assignment = axis.key + "=" + assignment_value(v);
    try {
      apply_override(cj, assignment);
    } catch (const InputError& e) {
      throw InputError(source + ": grid[\"" + axis.key + "\"]: " + e.what());
    }
    cell.overrides.push_back(assignment);
    const std::string part = name_part_of(axis, v);
    parts.push_back(part);
    if (axis.key == kSeedKey) {
      cell.seed = v.get<int64_t>();
      continue;
    }
    group_parts.push_back(part);
    if (axis.key == kEncodingKey) {
      cell.encoding = assignment_value(v);
    } else {
      variant_parts.push_back(part);
    }
  }
  drop_memory_if_memoryless(spec, cj, cell);
  cell.name = join(parts, "-");
  cell.group = join(group_parts, "-");
  cell.variant = join(variant_parts, "-");
  try {
    cell.config = config_from_json(cj, source + ": cell " + cell.name);
  } catch (const InputError& e) {
    throw InputError(std::string(e.what()) + " (grid values " + join(cell.overrides) + ")");
  }
  return cell;
}

}  // namespace

StudySpec study_from_json(const json& j, const std::string& source, int64_t threads) {
  StudySpec spec;
  spec.source = source;
  check_keys(j, kTopKeys, source);
  if (!j.contains("base"))
    throw InputError(source + ": \"base\" is missing; give a txl config (a path or inline)");
  if (!j.contains("grid"))
    throw InputError(source +
                     ": \"grid\" is missing, e.g. {\"model.pos_encoding\": [\"relative\", "
                     "\"rope\"], \"train.seed\": [1, 2, 3]}");
  const std::string base_source = read_base(j, source, spec);
  if (threads > 0) spec.base["train"]["threads"] = threads;
  const Config base = config_from_json(spec.base, base_source);
  spec.grid = parse_grid(j["grid"], source + ": grid");
  spec.eval = parse_eval(j.contains("eval") ? j["eval"] : json(), source + ": eval", base);
  spec.protocols = make_protocols(spec.eval, source + ": eval");
  if (j.contains("baseline")) spec.baseline = read_string(j["baseline"], source + ": baseline");

  // Every combination, the first axis outermost.
  std::vector<size_t> index(spec.grid.size(), 0);
  std::set<std::string> names;
  do {
    StudyCell cell = make_cell(spec, index, source);
    if (!names.insert(cell.name).second) {
      throw InputError(source + ": two cells would both be named " + cell.name +
                       " (grid values that differ only in characters a name cannot hold)");
    }
    if (std::find(spec.groups.begin(), spec.groups.end(), cell.group) == spec.groups.end())
      spec.groups.push_back(cell.group);
    spec.cells.push_back(std::move(cell));
  } while (next_combination(index, spec.grid));
  if (spec.baseline.empty()) spec.baseline = spec.cells.front().encoding;
  if (std::none_of(spec.cells.begin(), spec.cells.end(),
                   [&](const StudyCell& c) { return c.encoding == spec.baseline; })) {
    throw InputError(source + ": baseline \"" + spec.baseline +
                     "\" is not an encoding of the grid's model.pos_encoding");
  }
  return spec;
}

StudySpec read_study(const std::string& path, int64_t threads) {
  return study_from_json(read_json_file(path), path, threads);
}

std::vector<std::string> protocol_labels(const StudySpec& spec) {
  std::vector<std::string> out;
  for (const auto& p : spec.protocols) out.push_back(p.label);
  return out;
}

std::string baseline_group(const StudySpec& spec, const std::string& group,
                           const std::string& baseline) {
  for (const auto& cell : spec.cells) {
    if (cell.group == group) return cell.variant.empty() ? baseline : baseline + "-" + cell.variant;
  }
  return baseline;
}

std::vector<std::string> cell_names_with(const std::vector<GridAxis>& grid, size_t axis,
                                         const json& value) {
  std::vector<std::string> names;
  if (grid.empty() ||
      std::any_of(grid.begin(), grid.end(), [](const GridAxis& a) { return a.values.empty(); }))
    return names;
  std::vector<size_t> index(grid.size(), 0);
  do {
    if (grid[axis].values[index[axis]] != value) continue;
    std::vector<std::string> parts;
    for (size_t a = 0; a < grid.size(); ++a)
      parts.push_back(name_part_of(grid[a], grid[a].values[index[a]]));
    names.push_back(join(parts, "-"));
  } while (next_combination(index, grid));
  return names;
}

const StudyCell* find_cell(const StudySpec& spec, const std::string& name) {
  for (const auto& cell : spec.cells) {
    if (cell.name == name) return &cell;
  }
  return nullptr;
}

}  // namespace txl
