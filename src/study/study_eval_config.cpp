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

const std::vector<std::string> kEvalKeys = {"split",      "methods",     "lengths", "stride",
                                            "mem_lens",   "same_length", "aids",    "max_tokens",
                                            "checkpoint", "probes"};

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
  if (j.contains("same_length")) {
    const json& v = j["same_length"];
    if (!v.is_boolean())
      throw InputError(where + ".same_length must be true or false, got " + v.dump());
    e.same_length = v.get<bool>();
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

StudyEval parse_eval(const json& j, const std::string& where, const Config& base) {
  StudyEval e;
  e.lengths = base.eval.lengths;
  e.split = base.eval.split;
  if (!j.is_null()) read_eval_keys(j, where, e);
  std::sort(e.lengths.begin(), e.lengths.end());
  e.lengths.erase(std::unique(e.lengths.begin(), e.lengths.end()), e.lengths.end());
  if (e.same_length && std::find(e.mem_lens.begin(), e.mem_lens.end(), 0) != e.mem_lens.end()) {
    throw InputError(where +
                     ".same_length makes every query attend over the last mem_len keys; "
                     "it needs mem_lens >= 1 (or -1, the evaluated length), but they hold 0");
  }
  if (e.stride > e.lengths.front()) {
    throw InputError(where + ".stride (" + std::to_string(e.stride) +
                     ") is longer than the shortest length " + std::to_string(e.lengths.front()) +
                     "; a sliding window advances by 1 to L tokens (0 = L/2)");
  }
  return e;
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
        p.settings.same_length = method == EvalMethod::kMemory && e.same_length;
        p.settings.max_tokens = e.max_tokens;
        p.settings.aid = aid;
        p.settings.aid_factor = factor;
        p.label = method_name;
        if (method == EvalMethod::kMemory && (mem >= 0 || e.mem_lens.size() > 1))
          p.label += mem < 0 ? " mem=L" : " mem" + std::to_string(mem);
        if (p.settings.same_length) p.label += " same";
        if (aid != ExtrapolationAid::kNone) p.label += "+" + aid_spec;
        out.push_back(p);
      }
    }
  }
  return out;
}

}  // namespace txl
