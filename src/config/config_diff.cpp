#include "txl/config/config_diff.h"

#include <algorithm>

#include "txl/config/config.h"
#include "txl/config/config_keys.h"
#include "txl/config/encodings.h"

namespace txl {

namespace {

// The value a key takes when a config leaves it out: a config written before the key existed
// (an older run's config.json or checkpoint) means the default, which is no difference.
const nlohmann::json* default_of(const std::string& section, const std::string& key) {
  static const nlohmann::json defaults = config_to_json(Config{});
  if (!defaults.contains(section) || !defaults.at(section).is_object()) return nullptr;
  const auto& s = defaults.at(section);
  return s.contains(key) ? &s.at(key) : nullptr;
}

}  // namespace

std::vector<std::string> config_differences(const nlohmann::json& a, const nlohmann::json& b,
                                            const std::vector<std::string>& ignore) {
  std::vector<std::string> out;
  auto shown = [](const nlohmann::json* v) { return v ? v->dump() : std::string("(absent)"); };
  auto compare_key = [&](const std::string& path, const nlohmann::json* x,
                         const nlohmann::json* y) {
    if (std::find(ignore.begin(), ignore.end(), path) != ignore.end()) return;
    if (x && y && *x == *y) return;
    out.push_back(path + ": " + shown(x) + " vs " + shown(y));
  };
  if (!a.is_object() || !b.is_object()) {
    if (a != b) out.push_back("(whole config): " + a.dump() + " vs " + b.dump());
    return out;
  }
  // Union of sections and keys, in a's order first, then keys only b has.
  auto sections = [&](const nlohmann::json& j, std::vector<std::string>& names) {
    for (const auto& item : j.items()) {
      if (std::find(names.begin(), names.end(), item.key()) == names.end())
        names.push_back(item.key());
    }
  };
  std::vector<std::string> names;
  sections(a, names);
  sections(b, names);
  for (const auto& section : names) {
    const nlohmann::json* sa = a.contains(section) ? &a.at(section) : nullptr;
    const nlohmann::json* sb = b.contains(section) ? &b.at(section) : nullptr;
    if (!sa || !sb || !sa->is_object() || !sb->is_object()) {
      compare_key(section, sa, sb);
      continue;
    }
    std::vector<std::string> keys;
    sections(*sa, keys);
    sections(*sb, keys);
    for (const auto& key : keys) {
      const nlohmann::json* x = sa->contains(key) ? &sa->at(key) : nullptr;
      const nlohmann::json* y = sb->contains(key) ? &sb->at(key) : nullptr;
      const nlohmann::json* fallback = default_of(section, key);
      if (fallback && ((!x && y && *y == *fallback) || (!y && x && *x == *fallback))) continue;
      compare_key(section + "." + key, x, y);
    }
  }
  return out;
}

std::vector<std::string> shape_differences(const Config& a, const Config& b) {
  const nlohmann::json ja = config_to_json(a).at("model"), jb = config_to_json(b).at("model");
  const EncodingTraits& traits = encoding_traits(a.model.pos_encoding);
  std::vector<std::string> keys;
  for (const auto& field : config_keys::model_fields())
    if (field.shapes) keys.push_back(field.name);
  // Another encoding is already a difference; its options would only repeat it.
  if (a.model.pos_encoding == b.model.pos_encoding) {
    for (const auto& option : traits.options)
      if (option.shapes) keys.push_back(option.key);
  }
  nlohmann::json sa = nlohmann::json::object(), sb = nlohmann::json::object();
  for (const auto& key : keys) {
    if (ja.contains(key)) sa[key] = ja.at(key);
    if (jb.contains(key)) sb[key] = jb.at(key);
  }
  return config_differences({{"model", sa}}, {{"model", sb}});
}

}  // namespace txl
