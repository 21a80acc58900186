// A study config's "eval" section and the JSON readers the sections share
// (study_eval_config.h).
#include "txl/study/study_eval_config.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>

#include "txl/config/config_keys.h"
#include "txl/config/encodings.h"
#include "txl/eval/evaluate.h"
#include "txl/eval/protocol.h"
#include "txl/util/error.h"
#include "txl/util/text.h"

namespace txl {

using nlohmann::json;

namespace study_json {

void check_keys(const json& j, const std::vector<std::string>& allowed, const std::string& where) {
  if (!j.is_object()) throw InputError(where + " must be a JSON object");
  for (const auto& [key, value] : j.items()) {
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      throw InputError(where + ": unknown key \"" + key + "\"; valid keys: " + join(allowed));
    }
  }
}

int64_t read_int(const json& j, const std::string& where) {
  int64_t out = 0;
  config_keys::read_value(j, where, out);  // an unsigned past int64 refused, never wrapped
  return out;
}

std::string read_string(const json& j, const std::string& where) {
  if (!j.is_string()) throw InputError(where + " must be a string, got " + j.dump());
  return j.get<std::string>();
}

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

}  // namespace study_json

namespace {

using study_json::check_keys;
using study_json::check_list;
using study_json::read_int;
using study_json::read_string;

// The section's own keys; the protocols' study keys (protocol.h) are added to them.
std::vector<std::string> eval_keys() {
  std::vector<std::string> keys = {"split",      "methods",    "lengths", "aids",
                                   "max_tokens", "checkpoint", "probes"};
  for (const auto& protocol : eval_protocols()) {
    for (const auto& s : protocol.settings) {
      if (s.study_key) keys.push_back(s.study_key);
    }
  }
  return keys;
}

// How a study message names a protocol's setting: where.study_key ("eval.mem_lens").
SettingNamer study_namer(const EvalProtocol& protocol, const std::string& where) {
  return [&protocol, where](const std::string& name) {
    const ProtocolSetting* s = find_setting(protocol, name);
    return where + "." + (s && s->study_key ? s->study_key : name);
  };
}

// A setting of one protocol given while the methods do not include it would be ignored in
// silence: refused, as every key a study config cannot use is.
void check_method_keys(const json& j, const std::string& where, const StudyEval& e) {
  for (const auto& protocol : eval_protocols()) {
    for (const auto& setting : protocol.settings) {
      if (!setting.study_key || !j.contains(setting.study_key) ||
          std::find(e.methods.begin(), e.methods.end(), protocol.name) != e.methods.end())
        continue;
      throw InputError(fmt::format(
          "{}.{} is a setting of the {} method, which the methods ({}) do not list; add \"{}\" "
          "to the methods or remove {}",
          where, setting.study_key, protocol.name, join(e.methods), protocol.name,
          setting.study_key));
    }
  }
}

// The protocols' study keys: a list (one protocol per value), a switch, or one number; each
// value in its range or the unset one.
void read_setting_keys(const json& j, const std::string& where, StudyEval& e) {
  for (const auto& protocol : eval_protocols()) {
    for (const auto& s : protocol.settings) {
      if (!s.study_key || !j.contains(s.study_key)) continue;
      const std::string key = where + "." + s.study_key;
      const json& v = j[s.study_key];
      std::vector<int64_t> values;
      if (s.study_list) {
        check_list(v, key);
        for (const auto& item : v) values.push_back(read_int(item, key));
      } else if (s.is_switch) {
        if (!v.is_boolean()) throw InputError(key + " must be true or false, got " + v.dump());
        values.push_back(v.get<bool>() ? 1 : 0);
      } else {
        values.push_back(read_int(v, key));
      }
      for (const int64_t value : values)
        check_setting_ranges(protocol, ProtocolSettings{{std::string(s.name), value}},
                             study_namer(protocol, where), /*accept_unset=*/true);
      e.protocol_settings[s.name] = values;
    }
  }
}

void read_eval_keys(const json& j, const std::string& where, StudyEval& e) {
  check_keys(j, eval_keys(), where);
  if (j.contains("split")) {
    e.split = read_string(j["split"], where + ".split");
    parse_eval_split(e.split, where + ".split");
  }
  if (j.contains("methods")) {
    e.methods.clear();
    check_list(j["methods"], where + ".methods");
    for (const auto& m : j["methods"]) {
      const std::string name = read_string(m, where + ".methods");
      parse_protocol_name(name, where + ".methods");
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
  read_setting_keys(j, where, e);
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

}  // namespace

namespace {

// Every combination of the protocol's settings the section gives: one per value of a list.
std::vector<ProtocolSettings> setting_combinations(const EvalProtocol& protocol,
                                                   const StudyEval& e) {
  std::vector<ProtocolSettings> out(1);
  for (const auto& s : protocol.settings) {
    const auto it = e.protocol_settings.find(s.name);
    if (it == e.protocol_settings.end()) continue;
    std::vector<ProtocolSettings> next;
    for (const auto& base : out) {
      for (const int64_t v : it->second) {
        ProtocolSettings c = base;
        c.set(s.name, v);
        next.push_back(c);
      }
    }
    out = std::move(next);
  }
  return out;
}

// " mem64 same": the label parts of a combination's settings.
std::string settings_label(const EvalProtocol& protocol, const ProtocolSettings& settings,
                           const StudyEval& e) {
  std::string out;
  for (const auto& s : protocol.settings) {
    if (!settings.has(s.name)) continue;
    out += study_label_part(s, settings.get(s.name), e.protocol_settings.at(s.name).size() > 1);
  }
  return out;
}

// Every method's settings against its rules at the shortest length (a stride past it, same
// length without memory), naming the study's keys.
void check_method_settings(const StudyEval& e, const std::string& where) {
  for (const auto& name : e.methods) {
    const EvalProtocol& protocol = eval_protocol(name);
    for (const auto& settings : setting_combinations(protocol, e)) {
      EvalRequest r;
      r.protocol = name;
      r.length = e.lengths.front();
      r.settings = settings;
      check_request_settings(r, study_namer(protocol, where), /*accept_unset=*/true);
    }
  }
}

}  // namespace

void add_study_settings_json(const StudyEval& e, json& j) {
  for (const auto& protocol : eval_protocols()) {
    for (const auto& s : protocol.settings) {
      if (!s.study_key) continue;
      const auto it = e.protocol_settings.find(s.name);
      const std::vector<int64_t> values =
          it == e.protocol_settings.end() ? std::vector<int64_t>{s.unset} : it->second;
      if (s.is_switch) {
        if (values.front() != 0) j[s.study_key] = true;
      } else if (s.study_list) {
        j[s.study_key] = values;
      } else {
        j[s.study_key] = values.front();
      }
    }
  }
}

StudyEval parse_eval(const json& j, const std::string& where, const Config& base) {
  StudyEval e;
  e.lengths = base.eval.lengths;
  e.split = base.eval.split;
  if (!j.is_null()) read_eval_keys(j, where, e);
  std::sort(e.lengths.begin(), e.lengths.end());
  e.lengths.erase(std::unique(e.lengths.begin(), e.lengths.end()), e.lengths.end());
  check_method_settings(e, where);
  return e;
}

std::vector<StudyProtocol> make_protocols(const StudyEval& e, const std::string& where) {
  std::vector<StudyProtocol> out;
  for (const auto& aid_spec : e.aids) {
    const auto [aid, factor] = parse_aid_spec(aid_spec, where + ".aids");
    for (const auto& method_name : e.methods) {
      const EvalProtocol& protocol = eval_protocol(method_name);
      for (const auto& settings : setting_combinations(protocol, e)) {
        StudyProtocol p;
        p.settings.protocol = method_name;
        p.settings.protocol_settings = settings;
        p.settings.max_tokens = e.max_tokens;
        p.settings.aid = aid;
        p.settings.aid_factor = factor;
        p.label = method_name + settings_label(protocol, settings, e);
        if (aid != ExtrapolationAid::kNone) p.label += "+" + aid_spec;
        out.push_back(p);
      }
    }
  }
  return out;
}

}  // namespace txl
