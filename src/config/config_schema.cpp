// The configuration's JSON Schema (config_schema.h), walked out of the key tables.
#include "txl/config/config_schema.h"

#include <cmath>
#include <map>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <variant>
#include <vector>

#include "txl/config/config.h"
#include "txl/config/config_keys.h"
#include "txl/config/config_ranges.h"
#include "txl/config/encodings.h"

namespace txl {

namespace {

using nlohmann::json;

// A bound as JSON: 1, not 1.0, for a whole number.
json bound(double v) {
  if (v == std::floor(v) && std::abs(v) < 1e15) return static_cast<int64_t>(v);
  return v;
}

// minimum / exclusiveMinimum / maximum / exclusiveMaximum of a key with a range.
void add_range(json& schema, const std::string& path) {
  const KeyRange* r = find_key_range(path);
  if (!r) return;
  schema[r->min_exclusive ? "exclusiveMinimum" : "minimum"] = bound(r->min);
  if (r->max) schema[r->max_exclusive ? "exclusiveMaximum" : "maximum"] = bound(*r->max);
}

json enum_schema(const std::vector<std::string>& names) {
  return {{"type", "string"}, {"enum", names}};
}

// The schema of a value of C++ type T at `path` ("train.lr").
template <typename T>
json value_schema(const std::string& path, const json& default_value) {
  json s;
  if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, double>) {
    s["type"] = std::is_same_v<T, int64_t> ? "integer" : "number";
    add_range(s, path);
  } else if constexpr (std::is_same_v<T, bool>) {
    s["type"] = "boolean";
  } else if constexpr (std::is_same_v<T, std::string>) {
    s["type"] = "string";
    if (path == "eval.split") s = enum_schema(config_keys::enum_names(EvalSplit{}));
    if (path == "train.device") s["pattern"] = device_name_pattern();
    if (path == "data.dir") s["minLength"] = 1;
  } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
    json items = {{"type", "integer"}};
    add_range(items, path + "[]");
    s = {{"type", "array"}, {"items", items}, {"minItems", 1}, {"uniqueItems", true}};
    if (path == "eval.lengths") s["maxItems"] = kMaxEvalLengths;
  } else if constexpr (std::is_same_v<T, TokenizerKind> || std::is_same_v<T, PosEncoding> ||
                       std::is_same_v<T, Precision>) {
    s = enum_schema(config_keys::enum_names(T{}));
  } else {
    // A kind of key this file does not know yet: typed by its default value.
    static const std::map<json::value_t, const char*> types = {
        {json::value_t::number_integer, "integer"}, {json::value_t::number_unsigned, "integer"},
        {json::value_t::number_float, "number"},    {json::value_t::boolean, "boolean"},
        {json::value_t::string, "string"},          {json::value_t::array, "array"},
        {json::value_t::object, "object"}};
    if (const auto t = types.find(default_value.type()); t != types.end()) s["type"] = t->second;
  }
  return s;
}

// model.adaptive: null, or an object of the keys adaptive.h describes.
json adaptive_schema() {
  json items = {{"type", "integer"}};
  add_range(items, "model.adaptive.cutoffs[]");
  json div_val = {{"type", "integer"}};
  add_range(div_val, "model.adaptive.div_val");
  const json known = {
      {"cutoffs", {{"type", "array"}, {"minItems", 1}, {"items", items}}},
      {"div_val", div_val},
      {"tie_projs",
       {{"anyOf",
         {{{"type", "boolean"}}, {{"type", "array"}, {"items", {{"type", "boolean"}}}}}}}}};
  json properties = json::object();
  for (const auto& key : adaptive_keys()) {
    if (!known.contains(key))
      throw std::logic_error("config_schema.cpp does not describe model.adaptive." + key);
    properties[key] = known.at(key);
  }
  const json object = {{"type", "object"},
                       {"additionalProperties", false},
                       {"required", {"cutoffs"}},
                       {"properties", properties}};
  return {{"anyOf", {{{"type", "null"}}, object}}};
}

template <typename S>
json field_schema(const config_keys::Field<S>& field, const std::string& path,
                  const json& default_value) {
  json s = std::visit(
      [&](auto member) {
        using T = std::decay_t<decltype(std::declval<S&>().*member)>;
        if constexpr (std::is_same_v<T, std::optional<AdaptiveConfig>>) {
          return adaptive_schema();
        } else {
          return value_schema<T>(path, default_value);
        }
      },
      field.member);
  s["description"] = field.doc;
  if (path != "data.dir") s["default"] = default_value;  // the one key without a default
  return s;
}

// Every encoding's own keys (validate() checks that they belong to the chosen encoding).
void add_encoding_options(json& properties) {
  for (const auto& traits : encoding_registry()) {
    for (const auto& option : traits.options) {
      json s = {{"type", option.integer ? "integer" : "number"},
                {"minimum", bound(option.min)},
                {"maximum", bound(option.max)},
                {"description", std::string(option.doc) + " (pos_encoding " + traits.name + ")"}};
      s["default"] = option.integer ? json(static_cast<int64_t>(option.default_value))
                                    : json(option.default_value);
      properties[option.key] = s;
    }
  }
}

}  // namespace

json config_schema() {
  const json defaults = config_to_json(Config{});
  json sections = json::object();
  config_keys::for_each_section([&](const std::string& name, const auto& fields, auto) {
    json properties = json::object();
    for (const auto& field : fields) {
      const std::string path = name + "." + field.name;
      properties[field.name] = field_schema(field, path, defaults.at(name).at(field.name));
    }
    if (name == "model") add_encoding_options(properties);
    json section = {
        {"type", "object"}, {"additionalProperties", false}, {"properties", properties}};
    if (name == "data") section["required"] = {"dir"};
    sections[name] = section;
  });
  return {{"$schema", "https://json-schema.org/draft/2020-12/schema"},
          {"title", "txl run configuration"},
          {"description",
           "Generated by `txl config --schema` from txl's key tables; regenerate with `build/txl "
           "config --schema > configs/schema.json`, never edit by hand. Rules between keys "
           "(model.d_model = n_head * d_head, an encoding's keys only with that encoding, "
           "train.tgt_len_max 0 or >= tgt_len, data.vocab_size for bpe and unigram only) are "
           "checked by txl, not by this schema."},
          {"type", "object"},
          {"additionalProperties", false},
          {"required", {"data"}},
          {"properties", sections}};
}

std::string config_schema_text() { return config_schema().dump(2) + "\n"; }

}  // namespace txl
