#include "txl/study/study_config.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "txl/config/encodings.h"
#include "txl/eval/evaluate.h"
#include "txl/eval/protocol.h"
#include "txl/study/study_eval_config.h"
#include "txl/util/error.h"
#include "txl/util/text.h"

namespace txl {

namespace {

using nlohmann::json;
using study_json::check_keys;
using study_json::check_list;
using study_json::read_int;
using study_json::read_string;

const std::vector<std::string> kTopKeys = {"base", "grid", "eval", "baseline"};
constexpr const char* kEncodingKey = "model.pos_encoding";
constexpr const char* kSeedKey = "train.seed";

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
