// The configuration's key tables, for the files of src/config that walk them: parsing and
// writing (config.cpp), --set overrides (config_override.cpp). The rest of txl goes through
// config.h.
//
// Each section is described once, by a table of fields (JSON name, member pointer, short
// doc). Parsing, config_to_json, --set overrides and the "valid keys" lists in error messages
// all walk the same tables, so a key added to a table is accepted, written and listed
// everywhere at once. The tables are in config_keys.cpp; reading an enum-valued key is with
// the enums' names in config_names.cpp.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

#include "txl/config/config.h"
#include "txl/util/text.h"

namespace txl::config_keys {

// Reading one JSON value into one member. Messages carry the key path but not the source;
// callers prefix the source (file path or --set assignment).
void read_value(const nlohmann::json& v, const std::string& path, int64_t& out);
void read_value(const nlohmann::json& v, const std::string& path, double& out);
void read_value(const nlohmann::json& v, const std::string& path, bool& out);
void read_value(const nlohmann::json& v, const std::string& path, std::string& out);
void read_value(const nlohmann::json& v, const std::string& path, std::vector<int64_t>& out);
void read_value(const nlohmann::json& v, const std::string& path, TokenizerKind& out);
void read_value(const nlohmann::json& v, const std::string& path, PosEncoding& out);
void read_value(const nlohmann::json& v, const std::string& path, Precision& out);
void read_value(const nlohmann::json& v, const std::string& path,
                std::optional<AdaptiveConfig>& out);

// Every name an enum-valued key takes, in its table's order (config_names.cpp), for the
// JSON Schema's "enum" lists; EvalSplit's are what eval.split takes.
std::vector<std::string> enum_names(TokenizerKind);
std::vector<std::string> enum_names(PosEncoding);
std::vector<std::string> enum_names(Precision);
std::vector<std::string> enum_names(EvalSplit);

// The member pointer's type is the field's kind; std::visit dispatches on it.
template <typename S>
struct Field {
  const char* name;
  std::variant<int64_t S::*, double S::*, bool S::*, std::string S::*, std::vector<int64_t> S::*,
               TokenizerKind S::*, PosEncoding S::*, Precision S::*,
               std::optional<AdaptiveConfig> S::*>
      member;
  const char* doc;
  bool shapes = false;  // model: sets a parameter's shape, so fine-tuning must keep it
};

template <typename S>
using Fields = std::vector<Field<S>>;

const Fields<DataConfig>& data_fields();
const Fields<ModelConfig>& model_fields();
const Fields<TrainConfig>& train_fields();
const Fields<EvalConfig>& eval_fields();

// "data", "model", "train", "eval": the top-level keys, in file order.
const std::vector<std::string>& section_names();

// Calls f(name, fields, section member of Config) for each section, in file order.
template <typename F>
void for_each_section(F&& f) {
  f("data", data_fields(), &Config::data);
  f("model", model_fields(), &Config::model);
  f("train", train_fields(), &Config::train);
  f("eval", eval_fields(), &Config::eval);
}

template <typename S>
std::vector<std::string> key_names(const Fields<S>& fields) {
  std::vector<std::string> names;
  for (const Field<S>& field : fields) names.push_back(field.name);
  return names;
}

template <typename S>
const Field<S>* find_field(const Fields<S>& fields, const std::string& key) {
  for (const Field<S>& field : fields) {
    if (key == field.name) return &field;
  }
  return nullptr;
}

// Keys a section accepts beside its fields: "model" also takes every encoding's options
// (validate() then checks that they belong to the chosen encoding).
template <typename S>
std::vector<std::string> extra_key_names(const S* /*section*/) {
  return {};
}
std::vector<std::string> extra_key_names(const ModelConfig* /*section*/);

template <typename S>
std::string unknown_key_message(const std::string& section, const std::string& key,
                                const Fields<S>& fields) {
  std::vector<std::string> valid = key_names(fields);
  for (auto& extra : extra_key_names(static_cast<const S*>(nullptr))) valid.push_back(extra);
  return "unknown key \"" + section + "." + key + "\"; valid keys in \"" + section +
         "\": " + join(valid) + suggestion(key, valid);
}

template <typename S>
void read_field(const Field<S>& field, const nlohmann::json& value, const std::string& path,
                S& out) {
  std::visit([&](auto member) { read_value(value, path, out.*member); }, field.member);
}

// A key that is no field of the section; returns false when the section has no such key.
template <typename S>
bool read_extra(const nlohmann::json& /*v*/, const std::string& /*key*/,
                const std::string& /*path*/, S& /*out*/) {
  return false;
}
// model: an option of some encoding, stored by name.
bool read_extra(const nlohmann::json& v, const std::string& key, const std::string& path,
                ModelConfig& out);

}  // namespace txl::config_keys
