// The JSON Schema of a run configuration (config/config_schema.h): the committed
// configs/schema.json is what `txl config --schema` prints now, every shipped run config
// passes it, and it refuses what txl refuses (a misspelt key anywhere, a wrong type, a value
// outside a key's range). No JSON Schema library is at hand, so a small validator for the
// keywords the schema uses is below; it fails on any other keyword, so the schema cannot
// grow one that goes unchecked here.
#include "txl/config/config_schema.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <sstream>

#include "base_test_util.h"
#include "txl/config/config.h"
#include "txl/config/config_ranges.h"
#include "txl/config/encodings.h"

namespace txl {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

bool has_type(const json& v, const std::string& type) {
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "boolean") return v.is_boolean();
  if (type == "null") return v.is_null();
  if (type == "number") return v.is_number();
  if (type == "integer") {
    return v.is_number_integer() || (v.is_number_float() && std::isfinite(v.get<double>()) &&
                                     v.get<double>() == std::floor(v.get<double>()));
  }
  throw std::logic_error("unknown type " + type);
}

void validate_node(const json& schema, const json& v, const std::string& at,
                   std::vector<std::string>& errors);

// The keywords for numbers, strings and arrays.
void validate_scalars(const json& s, const json& v, const std::string& at,
                      std::vector<std::string>& errors) {
  const auto fail = [&](const std::string& why) { errors.push_back(at + ": " + why); };
  if (v.is_number()) {
    const double x = v.get<double>();
    if (s.contains("minimum") && !(x >= s["minimum"].get<double>())) fail("below minimum");
    if (s.contains("maximum") && !(x <= s["maximum"].get<double>())) fail("above maximum");
    if (s.contains("exclusiveMinimum") && !(x > s["exclusiveMinimum"].get<double>()))
      fail("not above exclusiveMinimum");
    if (s.contains("exclusiveMaximum") && !(x < s["exclusiveMaximum"].get<double>()))
      fail("not below exclusiveMaximum");
  }
  if (v.is_string()) {
    const std::string text = v.get<std::string>();
    if (s.contains("minLength") && text.size() < s["minLength"].get<size_t>()) fail("too short");
    if (s.contains("pattern") &&
        !std::regex_search(text, std::regex(s["pattern"].get<std::string>())))
      fail("does not match " + s["pattern"].get<std::string>());
  }
  if (v.is_array()) {
    if (s.contains("minItems") && v.size() < s["minItems"].get<size_t>()) fail("too few items");
    if (s.contains("maxItems") && v.size() > s["maxItems"].get<size_t>()) fail("too many items");
    if (s.value("uniqueItems", false) && std::set<json>(v.begin(), v.end()).size() != v.size())
      fail("items repeat");
    if (s.contains("items")) {
      for (size_t i = 0; i < v.size(); ++i)
        validate_node(s["items"], v[i], at + "[" + std::to_string(i) + "]", errors);
    }
  }
}

void validate_node(const json& s, const json& v, const std::string& at,
                   std::vector<std::string>& errors) {
  static const std::set<std::string> known = {"$schema",
                                              "title",
                                              "description",
                                              "default",
                                              "type",
                                              "enum",
                                              "minimum",
                                              "maximum",
                                              "exclusiveMinimum",
                                              "exclusiveMaximum",
                                              "pattern",
                                              "minLength",
                                              "items",
                                              "minItems",
                                              "maxItems",
                                              "uniqueItems",
                                              "properties",
                                              "additionalProperties",
                                              "required",
                                              "anyOf"};
  for (const auto& [keyword, value] : s.items()) {
    if (!known.count(keyword)) throw std::logic_error("the validator lacks keyword " + keyword);
  }
  if (s.contains("type") && !has_type(v, s["type"].get<std::string>())) {
    errors.push_back(at + ": not of type " + s["type"].get<std::string>());
    return;
  }
  if (s.contains("enum") && std::find(s["enum"].begin(), s["enum"].end(), v) == s["enum"].end())
    errors.push_back(at + ": not one of " + s["enum"].dump());
  if (s.contains("anyOf")) {
    bool any = false;
    std::vector<std::string> why;  // what the options of v's type found wrong
    for (const auto& option : s["anyOf"]) {
      std::vector<std::string> option_errors;
      validate_node(option, v, at, option_errors);
      any = any || option_errors.empty();
      if (!option.contains("type") || has_type(v, option["type"].get<std::string>()))
        why.insert(why.end(), option_errors.begin(), option_errors.end());
    }
    if (!any) {
      errors.push_back(at + ": matches none of anyOf");
      errors.insert(errors.end(), why.begin(), why.end());
    }
  }
  validate_scalars(s, v, at, errors);
  if (!v.is_object()) return;
  for (const auto& key : s.value("required", json::array())) {
    if (!v.contains(key.get<std::string>())) errors.push_back(at + ": lacks " + key.dump());
  }
  const json properties = s.value("properties", json::object());
  for (const auto& [key, item] : v.items()) {
    if (properties.contains(key)) {
      validate_node(properties[key], item, at + "." + key, errors);
    } else if (s.contains("additionalProperties") && !s["additionalProperties"].get<bool>()) {
      errors.push_back(at + ": unknown key \"" + key + "\"");
    }
  }
}

std::vector<std::string> schema_errors(const json& config) {
  static const json schema = config_schema();
  std::vector<std::string> errors;
  validate_node(schema, config, "config", errors);
  return errors;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const fs::path kConfigs = fs::path(TXL_SOURCE_DIR) / "configs";

// Every run config shipped: configs/**/*.json but the schema and the studies (grids of runs).
std::vector<fs::path> shipped_run_configs() {
  std::vector<fs::path> out;
  for (const auto& entry : fs::recursive_directory_iterator(kConfigs)) {
    const fs::path& p = entry.path();
    if (p.extension() != ".json" || p.filename() == "schema.json") continue;
    if (p.parent_path().filename() == "studies") continue;
    out.push_back(p);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// A config txl accepts, to change one key in.
json base_config() {
  json j = config_to_json(Config{});
  j["data"]["dir"] = "data/tiny";
  return j;
}

// txl's own verdict: "" when it accepts `j`, else its message.
std::string txl_refusal(const json& j) {
  return testing::input_error([&] { config_from_json(j, "test"); });
}

TEST(ConfigSchema, CommittedFileIsWhatTxlConfigSchemaPrints) {
  const fs::path committed = kConfigs / "schema.json";
  ASSERT_TRUE(fs::exists(committed)) << committed;
  EXPECT_TRUE(read_file(committed) == config_schema_text())
      << "configs/schema.json differs from the schema the key tables give now (a config key "
         "was added, removed or changed). Regenerate it and commit the result:\n"
         "  build/txl config --schema > configs/schema.json";
}

TEST(ConfigSchema, EveryShippedRunConfigPassesAndTxlAgrees) {
  const auto configs = shipped_run_configs();
  ASSERT_GE(configs.size(), 10u) << "the shipped configs were not found under " << kConfigs;
  for (const auto& path : configs) {
    const json j = json::parse(read_file(path));
    EXPECT_EQ(joined(schema_errors(j)), "") << path;
    EXPECT_EQ(txl_refusal(j), "") << path;
  }
}

TEST(ConfigSchema, AMisspeltKeyIsRefusedAtEveryLevel) {
  const json config = json::parse(read_file(kConfigs / "kjv-char-relative.json"));
  ASSERT_TRUE(schema_errors(config).empty());
  const std::vector<std::pair<std::string, std::function<void(json&)>>> typos = {
      {"\"trian\"", [](json& j) { j["trian"] = j["train"]; }},
      {"\"n_layers\"", [](json& j) { j["model"]["n_layers"] = 4; }},
      {"\"tokeniser\"", [](json& j) { j["data"]["tokeniser"] = "char"; }},
      {"\"lenghts\"", [](json& j) { j["eval"]["lenghts"] = {64}; }},
      {"\"learning_rate\"", [](json& j) { j["train"]["learning_rate"] = 1e-3; }},
      {"\"cutof\"", [](json& j) {
         j["data"]["tokenizer"] = "word";
         j["model"]["adaptive"] = {{"cutoffs", {100}}, {"cutof", {200}}};
       }}};
  for (const auto& [key, misspell] : typos) {
    json j = config;
    misspell(j);
    EXPECT_NE(joined(schema_errors(j)).find("unknown key " + key), std::string::npos)
        << key << "\n"
        << joined(schema_errors(j));
    EXPECT_NE(txl_refusal(j), "") << key;
  }
}

TEST(ConfigSchema, AValueOfTheWrongTypeIsRefusedByBoth) {
  const json base = base_config();
  for (const auto& [section, keys] : base.items()) {
    for (const auto& [key, value] : keys.items()) {
      json j = base;
      // A string where anything else goes, a number where a string goes.
      j[section][key] = value.is_string() ? json(7) : json("seven");
      if (key == "adaptive") j[section][key] = 7;
      EXPECT_FALSE(schema_errors(j).empty()) << section << "." << key;
      EXPECT_NE(txl_refusal(j), "") << section << "." << key;
    }
  }
}

// Sets `path` ("train.lr", "eval.lengths[]", "model.adaptive.div_val") to `v` in a config
// where the key is read.
json with_value(const std::string& path, const json& v) {
  json j = base_config();
  const auto dot = path.find('.');
  const std::string section = path.substr(0, dot), key = path.substr(dot + 1);
  if (key.rfind("adaptive.", 0) == 0) {
    j["data"]["tokenizer"] = "word";
    j["model"]["adaptive"] = {{"cutoffs", {10}}};
    if (key == "adaptive.cutoffs[]") j["model"]["adaptive"]["cutoffs"] = {v};
    if (key == "adaptive.div_val") j["model"]["adaptive"]["div_val"] = v;
  } else if (key.size() > 2 && key.substr(key.size() - 2) == "[]") {
    j[section][key.substr(0, key.size() - 2)] = {v};
  } else {
    j[section][key] = v;
  }
  return j;
}

// The schema of `path` ("train.lr", "eval.lengths[]", "model.adaptive.div_val"), or null.
json schema_at(const std::string& path) {
  json node = config_schema();
  size_t begin = 0;
  while (begin < path.size()) {
    const size_t dot = path.find('.', begin);
    std::string key =
        path.substr(begin, dot == std::string::npos ? std::string::npos : dot - begin);
    const bool items = key.size() > 2 && key.substr(key.size() - 2) == "[]";
    if (items) key.resize(key.size() - 2);
    if (node.contains("anyOf")) node = node["anyOf"].back();  // model.adaptive: the object
    if (!node.contains("properties") || !node["properties"].contains(key)) return nullptr;
    node = node["properties"][key];
    if (items) node = node["items"];
    begin = dot == std::string::npos ? path.size() : dot + 1;
  }
  return node;
}

TEST(ConfigSchema, EveryRangeIsStatedAndAValuePastItIsRefusedByBoth) {
  int checked = 0;
  for (const KeyRange& r : key_ranges()) {
    const std::string path = r.path;
    const std::string named = path.substr(0, path.find('['));
    const json stated = schema_at(path);
    ASSERT_TRUE(stated.is_object()) << path << " has a range but is no key of the schema";
    EXPECT_EQ(stated.value(r.min_exclusive ? "exclusiveMinimum" : "minimum", json()), r.min)
        << path;
    // Just past each end: a whole step for integers (all our bounds are whole numbers).
    std::vector<double> outside = {r.min_exclusive ? r.min : r.min - 1};
    if (r.max) outside.push_back(r.max_exclusive ? *r.max : *r.max + 1);
    for (const double x : outside) {
      const json v = x == std::floor(x) ? json(static_cast<int64_t>(x)) : json(x);
      const json j = with_value(path, v);
      EXPECT_FALSE(schema_errors(j).empty()) << path << " = " << v;
      const std::string refusal = txl_refusal(j);
      EXPECT_NE(refusal.find(named), std::string::npos) << path << " = " << v << ": " << refusal;
      ++checked;
    }
    const double lowest = r.min_exclusive ? r.min + 1 : r.min;
    const json at_min = with_value(path, json(static_cast<int64_t>(lowest)));
    EXPECT_EQ(joined(schema_errors(at_min)), "") << path << " at its lower end";
  }
  EXPECT_GE(checked, 30);
}

TEST(ConfigSchema, AnEncodingsOwnKeyIsTypedAndBounded) {
  for (const auto& traits : encoding_registry()) {
    for (const auto& option : traits.options) {
      json j = base_config();
      j["model"]["pos_encoding"] = traits.name;
      j["model"][option.key] = option.max + 1;
      EXPECT_FALSE(schema_errors(j).empty()) << option.key;
      EXPECT_NE(txl_refusal(j).find(option.key), std::string::npos) << option.key;
    }
  }
}

}  // namespace
}  // namespace txl
