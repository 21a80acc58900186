// Everything a protocol's declared settings give its consumers (protocol.h): the declaration
// by named parts (SettingDeclaration), resolution, range checks, the cache key and file name,
// JSON, the report column and the study label. Nothing here names a protocol or a setting.
#include <spdlog/fmt/fmt.h>

#include "txl/eval/protocol.h"
#include "txl/util/error.h"

namespace txl {

SettingDeclaration::SettingDeclaration(const char* name, const char* flag, bool is_switch) {
  s_.name = name;
  s_.flag = flag;
  s_.is_switch = is_switch;
  if (is_switch) {
    range(0, 1);
    unset(0, "off", "off");
  }
}

SettingDeclaration& SettingDeclaration::range(int64_t min, int64_t max) {
  s_.min = min;
  s_.max = max;
  has_range_ = true;
  return *this;
}

SettingDeclaration& SettingDeclaration::unset(int64_t value, const char* text,
                                              const char* short_text,
                                              int64_t (*resolve)(int64_t length)) {
  s_.unset = value;
  s_.unset_text = text;
  s_.unset_short = short_text;
  s_.resolve_unset = resolve;
  has_unset_ = true;
  return *this;
}

SettingDeclaration& SettingDeclaration::study_key(const char* key) {
  s_.study_key = key;
  s_.study_list = false;
  return *this;
}

SettingDeclaration& SettingDeclaration::study_list(const char* key) {
  s_.study_key = key;
  s_.study_list = true;
  return *this;
}

SettingDeclaration& SettingDeclaration::report(const char* format) {
  s_.report = format;
  return *this;
}

SettingDeclaration& SettingDeclaration::study_label(const char* format) {
  s_.study_label = format;
  return *this;
}

SettingDeclaration& SettingDeclaration::cache_tag(const char* tag) {
  s_.cache_tag = tag;
  return *this;
}

SettingDeclaration& SettingDeclaration::doc(const char* help) {
  s_.doc = help;
  return *this;
}

SettingDeclaration::operator ProtocolSetting() const {
  const auto missing = [this](const char* part) {
    throw std::logic_error(fmt::format("evaluation method setting {} ({}) is declared without {}",
                                       s_.name ? s_.name : "?", s_.flag ? s_.flag : "?", part));
  };
  if (s_.name == nullptr || s_.flag == nullptr) missing("a name and a flag");
  if (!has_range_) missing("range()");
  if (!has_unset_) missing("unset()");
  if (s_.report == nullptr) missing("report()");
  if (s_.cache_tag == nullptr) missing("cache_tag()");
  if (s_.doc == nullptr) missing("doc()");
  return s_;
}

const ProtocolSetting* find_setting(const EvalProtocol& protocol, const std::string& name) {
  for (const auto& s : protocol.settings) {
    if (name == s.name) return &s;
  }
  return nullptr;
}

SettingNamer flag_namer(const EvalProtocol& protocol) {
  return [&protocol](const std::string& name) {
    const ProtocolSetting* s = find_setting(protocol, name);
    return s ? std::string(s->flag) : name;
  };
}

int64_t resolved_setting(const EvalProtocol& protocol, const ProtocolSettings& settings,
                         const std::string& name, int64_t length) {
  const ProtocolSetting* s = find_setting(protocol, name);
  if (s == nullptr)
    throw std::logic_error("evaluation method " + std::string(protocol.name) + " has no setting " +
                           name);
  const int64_t v = settings.value_or(name, s->unset);
  return v == s->unset && s->resolve_unset ? s->resolve_unset(length) : v;
}

ProtocolSettings resolved_settings(const EvalRequest& request) {
  const EvalProtocol& protocol = eval_protocol(request.protocol);
  ProtocolSettings out;
  for (const auto& s : protocol.settings)
    out.set(s.name, resolved_setting(protocol, request.settings, s.name, request.length));
  return out;
}

namespace {

// "1 to 4", "at least 1" (no upper bound worth stating).
std::string range_text(const ProtocolSetting& s) {
  if (s.max >= (int64_t{1} << 31)) return fmt::format("at least {}", s.min);
  return fmt::format("{} to {}", s.min, s.max);
}

}  // namespace

void check_setting_ranges(const EvalProtocol& protocol, const ProtocolSettings& settings,
                          const SettingNamer& name, bool accept_unset) {
  for (const auto& [key, value] : settings.values()) {
    const ProtocolSetting* s = find_setting(protocol, key);
    if (s == nullptr) continue;  // another protocol's, as a request's unused fields are
    if ((accept_unset && value == s->unset) || (value >= s->min && value <= s->max)) continue;
    if (s->is_switch)
      throw InputError(fmt::format("{} must be true or false, got {}", name(key), value));
    if (accept_unset) {
      throw InputError(fmt::format("{} {} is not valid; expected {}, or {} for {}", name(key),
                                   value, range_text(*s), s->unset, s->unset_text));
    }
    throw InputError(fmt::format("{} {} is not valid; expected {} (leave {} out for {})", name(key),
                                 value, range_text(*s), name(key), s->unset_text));
  }
}

void check_request_settings(const EvalRequest& request, const SettingNamer& name,
                            bool accept_unset) {
  const EvalProtocol& protocol = eval_protocol(request.protocol);
  check_setting_ranges(protocol, request.settings, name, accept_unset);
  EvalRequest resolved = request;
  resolved.settings = resolved_settings(request);
  if (protocol.check) protocol.check(resolved, name);
}

void add_settings_to_key(const EvalProtocol& protocol, const ProtocolSettings& resolved,
                         nlohmann::json& key) {
  for (const auto& s : protocol.settings) {
    const int64_t v = resolved.get(s.name);
    if (!s.is_switch)
      key[s.name] = v;
    else if (v != 0)
      key[s.name] = true;  // absent when off
  }
}

std::string settings_file_part(const EvalProtocol& protocol, const nlohmann::json& key) {
  std::string out;
  for (const auto& s : protocol.settings) {
    if (!key.contains(s.name)) continue;
    if (s.is_switch)
      out += fmt::format("-{}", s.cache_tag);
    else
      out += fmt::format("-{}{}", s.cache_tag, key.at(s.name).get<int64_t>());
  }
  return out;
}

nlohmann::json settings_to_json(const EvalProtocol& protocol, const ProtocolSettings& settings) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& s : protocol.settings) {
    const int64_t v = settings.value_or(s.name, s.unset);
    if (s.is_switch)
      j[s.name] = v != 0;
    else
      j[s.name] = v;
  }
  return j;
}

ProtocolSettings settings_from_json(const EvalProtocol& protocol, const nlohmann::json& j) {
  ProtocolSettings out;
  for (const auto& s : protocol.settings) {
    const auto& v = j.at(s.name);
    out.set(s.name, s.is_switch ? int64_t{v.get<bool>()} : v.get<int64_t>());
  }
  return out;
}

std::string settings_text(const EvalProtocol& protocol, const ProtocolSettings& settings) {
  std::string out;
  for (const auto& s : protocol.settings) {
    const int64_t v = settings.value_or(s.name, s.unset);
    if (s.is_switch && v == 0) continue;
    if (!out.empty()) out += ' ';
    out += fmt::format(fmt::runtime(s.report), v);
  }
  return out.empty() ? "-" : out;
}

std::string study_label_part(const ProtocolSetting& s, int64_t value, bool several) {
  if (s.study_label == nullptr) return "";
  if (s.is_switch) return value != 0 ? fmt::format(" {}", s.study_label) : "";
  if (!several && value == s.unset) return "";
  const std::string shown =
      value == s.unset ? fmt::format("={}", s.unset_short) : std::to_string(value);
  return " " + fmt::format(fmt::runtime(s.study_label), shown);
}

}  // namespace txl
