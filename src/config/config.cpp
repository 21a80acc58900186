// Configuration parsing and serialisation: config_from_json and config_to_json walk the key
// tables of config_keys.h (--set overrides: config_override.cpp; validate(): config_rules.cpp).
#include "txl/config/config.h"

#include <algorithm>
#include <string>
#include <vector>

#include "txl/config/config_keys.h"
#include "txl/config/encodings.h"
#include "txl/util/error.h"
#include "txl/util/json.h"
#include "txl/util/text.h"

namespace txl {

namespace {

using config_keys::Field;
using config_keys::Fields;
using config_keys::find_field;
using config_keys::for_each_section;
using config_keys::read_extra;
using config_keys::read_field;
using config_keys::section_names;
using config_keys::unknown_key_message;
using nlohmann::json;

json write_value(int64_t value) { return value; }
json write_value(double value) { return value; }
json write_value(bool value) { return value; }
json write_value(const std::string& value) { return value; }
json write_value(const std::vector<int64_t>& value) { return value; }
json write_value(TokenizerKind value) { return to_string(value); }
json write_value(PosEncoding value) { return to_string(value); }
json write_value(Precision value) { return to_string(value); }
json write_value(const std::optional<AdaptiveConfig>& value) { return adaptive_to_json(value); }

std::string unknown_section_message(const std::string& key) {
  return "unknown key \"" + key + "\"; valid top-level keys: " + join(section_names()) +
         suggestion(key, section_names());
}

template <typename S>
void read_section(const json& j, const std::string& name, const Fields<S>& fields, S& out) {
  if (!j.is_object()) throw InputError(name + " must be an object, got " + shown(j));
  for (const auto& [key, value] : j.items()) {
    const Field<S>* field = find_field(fields, key);
    if (field) {
      read_field(*field, value, name + "." + key, out);
    } else if (!read_extra(value, key, name + "." + key, out)) {
      throw InputError(unknown_key_message(name, key, fields));
    }
  }
}

// The chosen encoding's options with defaults filled in, as config_to_json writes them.
void write_encoding_options(const ModelConfig& model, json& out) {
  for (const auto& option : encoding_traits(model.pos_encoding).options) {
    out[option.key] = option.integer ? json(encoding_option_int(model, option.key))
                                     : json(encoding_option(model, option.key));
  }
}

std::string prefixed(const std::string& source, const std::string& message) {
  return source.empty() ? message : source + ": " + message;
}

}  // namespace

Config config_from_json(const json& j, const std::string& source) {
  try {
    if (!j.is_object()) {
      throw InputError("the configuration must be a JSON object with sections " +
                       join(section_names()) + ", got " + shown(j));
    }
    const auto& names = section_names();
    for (const auto& item : j.items()) {
      if (std::find(names.begin(), names.end(), item.key()) == names.end()) {
        throw InputError(unknown_section_message(item.key()));
      }
    }
    Config config;
    for_each_section([&](const std::string& name, const auto& fields, auto section) {
      if (j.contains(name)) read_section(j.at(name), name, fields, config.*section);
    });
    // The only key without a default: there is no sensible corpus to fall back on.
    if (!j.contains("data") || !j.at("data").contains("dir")) {
      throw InputError("data.dir is required: the folder with train.txt, valid.txt, test.txt");
    }
    validate(config);
    return config;
  } catch (const InputError& e) {
    throw InputError(prefixed(source, e.what()));
  }
}

json config_to_json(const Config& config) {
  json j = json::object();
  for_each_section([&](const std::string& name, const auto& fields, auto section) {
    json& out = j[name] = json::object();
    for (const auto& field : fields) {
      std::visit([&](auto member) { out[field.name] = write_value((config.*section).*member); },
                 field.member);
    }
  });
  write_encoding_options(config.model, j["model"]);
  return j;
}

}  // namespace txl
