// --set overrides: apply_override checks one "section.key=value" against the key tables of
// config_keys.h and writes its value into the JSON tree before parsing.
#include <algorithm>
#include <cctype>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "txl/config/config.h"
#include "txl/config/config_keys.h"
#include "txl/util/error.h"
#include "txl/util/json.h"
#include "txl/util/text.h"
#include "txl/util/utf8.h"

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

// Splits "key=value" at the first '='; values may contain '=' themselves.
std::pair<std::string, std::string> split_assignment(const std::string& assignment) {
  const size_t eq = assignment.find('=');
  const std::string usage = "expected section.key=value, e.g. model.n_layer=6";
  if (eq == std::string::npos) throw InputError("--set " + assignment + ": missing '='; " + usage);
  if (eq == 0) throw InputError("--set " + assignment + ": empty key; " + usage);
  return {assignment.substr(0, eq), assignment.substr(eq + 1)};
}

std::optional<json> try_parse_json(const std::string& text) {
  try {
    return json::parse(text);
  } catch (const json::exception&) {  // parse_error, and out_of_range for e.g. 1e999
    return std::nullopt;
  }
}

// The JSON value an override's text stands for, given the kind of the key it sets.
template <typename T>
json override_value(const std::string& text, T*) {
  const std::optional<json> parsed = try_parse_json(text);
  if constexpr (std::is_same_v<T, std::string> || std::is_enum_v<T>) {
    // String keys take the text itself unless it was quoted, so data.dir=2024 names a folder.
    return parsed && parsed->is_string() ? *parsed : json(text);
  } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
    if (parsed && parsed->is_array()) return *parsed;
    // Shell-friendly list: eval.lengths=64,128,256 (and eval.lengths=64 for one length).
    json list = json::array();
    if (text.empty()) return list;
    std::stringstream items(text);
    std::string item;
    while (std::getline(items, item, ',')) {
      const std::optional<json> number = try_parse_json(item);
      list.push_back(number ? *number : json(item));
    }
    if (text.back() == ',') list.push_back("");  // getline drops a trailing empty item
    return list;
  } else {
    return parsed ? *parsed : json(text);
  }
}

// The JSON value an override's text stands for, given the field it sets.
template <typename S>
json field_override_value(const Field<S>& field, const std::string& text) {
  return std::visit(
      [&](auto member) {
        using T = std::remove_reference_t<decltype(S{}.*member)>;
        return override_value(text, static_cast<T*>(nullptr));
      },
      field.member);
}

// The key an override sets, e.g. "model.n_layer": section "model", field "n_layer".
struct OverrideKey {
  std::string path;
  std::string section;
  std::string field;
  std::string subkey;  // model.adaptive.KEY: a key of that object; empty otherwise
};

// The one key whose value is an object that --set reaches into (model.adaptive.cutoffs=...).
constexpr const char* kNestedKey = "model.adaptive";

// The key of an assignment without the blanks around it; throws unless it is section.key with
// section one of section_names().
OverrideKey parse_override_key(const std::string& raw_key, const std::string& context) {
  // Tolerate "--set 'model.n_layer = 6'".
  const size_t first = raw_key.find_first_not_of(" \t");
  const size_t last = raw_key.find_last_not_of(" \t");
  const std::string key = first == std::string::npos ? "" : raw_key.substr(first, last - first + 1);
  const size_t dot = key.find('.');
  const size_t second = key.find('.', dot == std::string::npos ? dot : dot + 1);
  const bool nested = second != std::string::npos && key.compare(0, second, kNestedKey) == 0 &&
                      second + 1 < key.size() && key.find('.', second + 1) == std::string::npos;
  if (key.empty() || dot == std::string::npos || dot == 0 || dot + 1 == key.size() ||
      (second != std::string::npos && !nested)) {
    throw InputError(context + ": the key must be section.key with section one of " +
                     join(section_names()) + ", e.g. model.n_layer=6");
  }
  const std::string section_name = key.substr(0, dot);
  const auto& names = section_names();
  if (std::find(names.begin(), names.end(), section_name) == names.end()) {
    throw InputError(context + ": unknown section \"" + section_name +
                     "\"; valid sections: " + join(names) + suggestion(section_name, names));
  }
  if (nested) {
    return {key, section_name, key.substr(dot + 1, second - dot - 1), key.substr(second + 1)};
  }
  return {key, section_name, key.substr(dot + 1), ""};
}

// --set model.adaptive.KEY=value: the object the configuration holds (or a new one) with KEY
// set, checked as parsing would read it.
json nested_override_value(const json& j, const OverrideKey& key, const std::string& text,
                           const std::string& context) {
  json object = json::object();
  if (j.contains(key.section) && j.at(key.section).is_object() &&
      j.at(key.section).contains(key.field) && j.at(key.section).at(key.field).is_object()) {
    object = j.at(key.section).at(key.field);
  }
  // cutoffs takes the shell-friendly list too: model.adaptive.cutoffs=2000,10000.
  object[key.subkey] = key.subkey == "cutoffs"
                           ? override_value(text, static_cast<std::vector<int64_t>*>(nullptr))
                           : override_value(text, static_cast<double*>(nullptr));
  try {
    std::optional<AdaptiveConfig> scratch;
    read_adaptive(object, kNestedKey, scratch);
  } catch (const InputError& e) {
    throw InputError(context + ": " + e.what());
  }
  return object;
}

// The value the override sets key to, read into a default section as parsing would read it,
// so that type errors are reported here, against the --set that caused them, not the file.
template <typename S>
json checked_override_value(const Fields<S>& fields, S Config::*section, const OverrideKey& key,
                            const std::string& text, const std::string& context) {
  try {
    S scratch = Config{}.*section;
    if (const Field<S>* field = find_field(fields, key.field)) {
      json value = field_override_value(*field, text);
      read_field(*field, value, key.path, scratch);
      return value;
    }
    json value = override_value(text, static_cast<double*>(nullptr));
    if (!read_extra(value, key.field, key.path, scratch)) {
      throw InputError(unknown_key_message(key.section, key.field, fields));
    }
    return value;
  } catch (const InputError& e) {
    throw InputError(context + ": " + e.what());
  }
}

// What f(fields, section member of Config) returns for the section called `name`, which must
// be one of section_names().
template <typename R, typename F>
R for_section(const std::string& name, F&& f) {
  std::optional<R> result;
  for_each_section([&](const std::string& candidate, const auto& fields, auto section) {
    if (candidate == name) result = f(fields, section);
  });
  return std::move(*result);
}

// The section's object in the tree, created when absent.
json& section_object(json& j, const std::string& name, const std::string& context) {
  json& target = j[name];
  if (target.is_null()) target = json::object();
  if (!target.is_object()) {
    throw InputError(context + ": \"" + name + "\" in the configuration is not an object, got " +
                     shown(target));
  }
  return target;
}

// The key an assignment sets, without blanks ("model.n_layer" of " model.n_layer = 6").
std::string assigned_key(const std::string& assignment) {
  const std::string raw = assignment.substr(0, assignment.find('='));
  const size_t first = raw.find_first_not_of(" \t");
  const size_t last = raw.find_last_not_of(" \t");
  return first == std::string::npos ? "" : raw.substr(first, last - first + 1);
}

// Whether `message` names `key` as a whole key path ("train.tgt_len" is not named by
// "train.tgt_len_max (4)").
bool names_key(const std::string& message, const std::string& key) {
  const auto word = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
  };
  for (size_t at = message.find(key); !key.empty() && at != std::string::npos;
       at = message.find(key, at + 1)) {
    const size_t end = at + key.size();
    const bool starts = at == 0 || (!word(message[at - 1]) && message[at - 1] != '.');
    if (starts && (end == message.size() || !word(message[end]))) return true;
  }
  return false;
}

}  // namespace

Config config_with_overrides(json base, const std::vector<std::string>& overrides,
                             const std::string& source) {
  for (const auto& assignment : overrides) apply_override(base, assignment);
  try {
    return config_from_json(base, "");
  } catch (const InputError& e) {
    const std::string message = e.what();
    // The last assignment of each key is the one in force.
    std::vector<std::string> blamed, keys;
    for (auto it = overrides.rbegin(); it != overrides.rend(); ++it) {
      const std::string key = assigned_key(*it);
      if (std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
      keys.push_back(key);
      if (names_key(message, key)) blamed.insert(blamed.begin(), "--set " + *it);
    }
    if (blamed.empty()) throw InputError(source.empty() ? message : source + ": " + message);
    throw InputError(join(blamed) + (source.empty() ? "" : " (over " + source + ")") + ": " +
                     message);
  }
}

void apply_override(json& j, const std::string& assignment) {
  // JSON strings are UTF-8: a value that is not could be neither printed nor saved.
  check_utf8(assignment, "--set " + assignment);
  const auto [raw_key, text] = split_assignment(assignment);
  const std::string context = "--set " + assignment;
  const OverrideKey key = parse_override_key(raw_key, context);
  if (j.is_null()) j = json::object();
  if (!j.is_object()) throw InputError(context + ": the configuration is not a JSON object");
  json value = !key.subkey.empty()
                   ? nested_override_value(j, key, text, context)
                   : for_section<json>(key.section, [&](const auto& fields, auto section) {
                       return checked_override_value(fields, section, key, text, context);
                     });
  section_object(j, key.section, context)[key.field] = std::move(value);
}

}  // namespace txl
