// What every probe shares: names and settings as users write them, checked against each
// probe's declared options, and metrics as JSON and as a table.
#include "txl/probe/probe.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "txl/eval/eval_footprint.h"
#include "txl/platform/resources.h"
#include "txl/util/error.h"
#include "txl/util/text.h"

namespace txl {

namespace {

const std::vector<double>& values_of(const ProbeValues& v, const std::string& key) {
  const auto it = v.values.find(key);
  if (it == v.values.end() || it->second.empty())
    throw std::logic_error("probe option " + key + " has no value");
  return it->second;
}

const ProbeOptionSpec* find_option(const Probe& probe, const std::string& key) {
  for (const auto& o : probe.options) {
    if (key == o.key) return &o;
  }
  return nullptr;
}

std::vector<std::string> option_keys(const Probe& probe) {
  std::vector<std::string> keys;
  for (const auto& o : probe.options) keys.push_back(o.key);
  return keys;
}

// Every value within the spec's range, whole where it must be, one value unless a list.
void check_option_values(const ProbeOptionSpec& spec, const std::vector<double>& values,
                         const std::string& name) {
  if (values.empty()) throw InputError(name + " needs at least one value");
  if (!spec.list && values.size() > 1)
    throw InputError(name + " takes one value, got " + std::to_string(values.size()));
  for (const double v : values) {
    if (!std::isfinite(v) || v < spec.min || v > spec.max || (spec.integer && v != std::floor(v))) {
      const auto bound = [&](double b) {
        return spec.integer ? fmt::format("{:.0f}", b) : fmt::format("{:g}", b);
      };
      throw InputError(fmt::format("{} = {:g} is not valid; expected {} from {} to {} ({})", name,
                                   v, spec.integer ? "a whole number" : "a number", bound(spec.min),
                                   bound(spec.max), spec.doc));
    }
  }
  for (size_t i = 0; i < values.size(); ++i) {
    if (std::find(values.begin(), values.begin() + static_cast<long>(i), values[i]) !=
        values.begin() + static_cast<long>(i))
      throw InputError(fmt::format("{} lists {:g} twice", name, values[i]));
  }
}

// "32,64,128": every part a whole decimal number (no spaces, no trailing text).
std::vector<double> parse_number_list(const std::string& text, const std::string& name) {
  std::vector<double> out;
  for (const auto& part : split(text, ',')) {
    size_t used = 0;
    double v = 0;
    try {
      v = std::stod(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (part.empty() || used != part.size() || std::isspace(static_cast<unsigned char>(part[0])))
      throw InputError(name + ": \"" + part + "\" is not a number");
    out.push_back(v);
  }
  return out;
}

}  // namespace

int64_t ProbeValues::integer(const std::string& key) const {
  return static_cast<int64_t>(values_of(*this, key).front());
}
double ProbeValues::number(const std::string& key) const { return values_of(*this, key).front(); }
std::vector<int64_t> ProbeValues::integers(const std::string& key) const {
  std::vector<int64_t> out;
  for (const double v : values_of(*this, key)) out.push_back(static_cast<int64_t>(v));
  return out;
}
const std::vector<double>& ProbeValues::numbers(const std::string& key) const {
  return values_of(*this, key);
}

const Probe& find_probe(std::string_view name, std::string_view key_path) {
  for (const auto& p : probe_registry()) {
    if (name == p.name) return p;
  }
  throw InputError(std::string(key_path) + " \"" + std::string(name) +
                   "\" is not a probe; expected one of " + join(probe_names()));
}

std::vector<std::string> probe_names() {
  std::vector<std::string> names;
  for (const auto& p : probe_registry()) names.push_back(p.name);
  return names;
}

ProbeRequest parse_probe_request(const std::string& names, const std::vector<std::string>& sets,
                                 uint64_t seed, const std::string& names_flag,
                                 const std::string& sets_flag) {
  ProbeRequest r;
  r.seed = seed;
  for (const auto& part : split(names, ',')) {
    const std::string name = part;
    find_probe(name, names_flag);
    if (std::find(r.names.begin(), r.names.end(), name) != r.names.end())
      throw InputError(names_flag + " names " + name + " twice");
    r.names.push_back(name);
  }
  for (const auto& set : sets) {
    const auto eq = set.find('=');
    const auto dot = set.find('.');
    if (eq == std::string::npos || dot == std::string::npos || dot > eq) {
      throw InputError(sets_flag + " \"" + set +
                       "\" is not PROBE.KEY=VALUES (e.g. copy.distances=32,64,128)");
    }
    const std::string probe = set.substr(0, dot), key = set.substr(dot + 1, eq - dot - 1);
    const Probe& p = find_probe(probe, sets_flag);
    if (std::find(r.names.begin(), r.names.end(), probe) == r.names.end())
      throw InputError(sets_flag + " " + set + " sets probe " + probe + ", which " + names_flag +
                       " does not list");
    const ProbeOptionSpec* spec = find_option(p, key);
    if (!spec) {
      throw InputError(sets_flag + " " + set + ": " + probe + " has no option \"" + key +
                       "\"; its options: " + join(option_keys(p)));
    }
    const std::string name = sets_flag + " " + probe + "." + key;
    if (r.settings[probe].count(key))  // as a repeated --lengths or config key is
      throw InputError(name + " is given twice; give each probe option once");
    auto values = parse_number_list(set.substr(eq + 1), name);
    check_option_values(*spec, values, name);
    r.settings[probe][key] = std::move(values);
  }
  return r;
}

ProbeRequest probe_request_from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object())
    throw InputError(where + " must be an object of probe name: {option: value(s)}");
  ProbeRequest r;
  for (const auto& [name, options] : j.items()) {
    if (name == "seed") {
      if (!options.is_number_unsigned())
        throw InputError(where + ".seed must be a non-negative whole number");
      r.seed = options.get<uint64_t>();
      continue;
    }
    if (name == "max_tokens") {
      if (!options.is_number() || !(options.get<double>() >= 1))
        throw InputError(where + ".max_tokens must be a number >= 1 (tokens a probe may forward)");
      r.max_tokens = options.get<double>();
      continue;
    }
    const Probe& p = find_probe(name, where);
    if (!options.is_object())
      throw InputError(where + "." + name +
                       " must be an object of option: value(s) ({} for defaults)");
    r.names.push_back(name);
    for (const auto& [key, value] : options.items()) {
      const std::string path = where + "." + name + "." + key;
      const ProbeOptionSpec* spec = find_option(p, key);
      if (!spec)
        throw InputError(path + " is not an option of " + name +
                         "; its options: " + join(option_keys(p)));
      std::vector<double> values;
      for (const auto& v : value.is_array() ? value : nlohmann::json::array({value})) {
        if (!v.is_number()) throw InputError(path + " must hold numbers, got " + v.dump());
        values.push_back(v.get<double>());
      }
      check_option_values(*spec, values, path);
      r.settings[name][key] = std::move(values);
    }
  }
  // A JSON object has no order: run and report the probes in the registry's.
  std::vector<std::string> ordered;
  for (const auto& name : probe_names()) {
    if (std::find(r.names.begin(), r.names.end(), name) != r.names.end()) ordered.push_back(name);
  }
  r.names = std::move(ordered);
  return r;
}

nlohmann::json to_json(const ProbeRequest& r) {
  nlohmann::json j = {{"seed", r.seed}};
  for (const auto& name : r.names) {
    nlohmann::json options = nlohmann::json::object();
    const auto it = r.settings.find(name);
    if (it != r.settings.end()) {
      for (const auto& [key, values] : it->second) options[key] = values;
    }
    j[name] = options;
  }
  return j;
}

namespace {

// A probe whose workload would not fit is refused before its check builds anything.
void check_probe_memory(const Probe& probe, const ProbeSubject& subject, const ProbeWorkload& w,
                        double available_bytes) {
  if (available_bytes <= 0 || w.windows < 1 || w.window < 2) return;
  // The windows' forward passes as evaluation makes them: windows of `window` tokens, as many
  // per pass as eval.batch_tokens allows (probe_scoring.h).
  EvalRequest pass;
  pass.length = w.window - 1;
  pass.batch_tokens = subject.config->eval.batch_tokens;
  const EvalFootprint e =
      estimate_eval_footprint(subject.config->model, static_cast<int64_t>(subject.vocab->size()),
                              pass, w.windows * pass.length);
  const double total = w.instance_bytes + e.total_bytes();
  if (total <= available_bytes) return;
  throw InputError(fmt::format(
      "probe {}: {} windows of {} tokens need about {} ({} of instances held at once, {} for "
      "the largest forward pass) but only {} of memory is available; ask for fewer or shorter "
      "windows ({}: {})",
      probe.name, w.windows, w.window, format_bytes(total), format_bytes(w.instance_bytes),
      format_bytes(e.total_bytes()), format_bytes(available_bytes), probe.name, probe.cost));
}

// A plan of hours is refused before it starts, naming the options that make it large.
void check_probe_budget(const Probe& probe, const ProbeWorkload& w, double max_tokens,
                        const std::string& where) {
  if (w.tokens <= max_tokens) return;
  std::vector<std::string> keys;
  for (const auto& spec : probe.options) keys.push_back(std::string(probe.name) + "." + spec.key);
  throw InputError(fmt::format(
      "{} {}: this plan forwards {:.3g} tokens ({}), past the {:.3g} a probe may forward unless "
      "asked: make {} smaller, or raise the ceiling with --probe-max-tokens (a study: "
      "probes.max_tokens)",
      where, probe.name, w.tokens, probe.cost, max_tokens, join(keys, ", ")));
}

}  // namespace

ProbeValues resolve_probe_values(const Probe& probe, const ProbeRequest& request,
                                 const ProbeSubject& subject, const std::string& where) {
  ProbeValues v = probe.defaults(subject);
  v.seed = request.seed;
  const auto it = request.settings.find(probe.name);
  if (it != request.settings.end()) {
    for (const auto& [key, values] : it->second) v.values[key] = values;
  }
  for (const auto& spec : probe.options) {
    check_option_values(spec, v.values[spec.key], where + " " + probe.name + "." + spec.key);
  }
  const ProbeWorkload w = probe.workload(subject, v);
  check_probe_budget(probe, w, request.max_tokens, where);
  check_probe_memory(probe, subject, w, available_ram_bytes());
  probe.check(subject, v);
  return v;
}

nlohmann::json to_json(const ProbeMetric& m) {
  nlohmann::json j = {{"series", m.series}, {"x_name", m.x_name}, {"x", m.x}, {"value", m.value}};
  if (m.has_interval) {
    j["lo"] = m.lo;
    j["hi"] = m.hi;
  }
  if (!m.grid.empty()) {
    j["grid"] = m.grid;
    j["y_name"] = m.y_name;
    j["grid_y"] = m.grid_y;
  }
  if (!m.in_table) j["in_table"] = false;
  return j;
}

ProbeMetric metric_from_json(const nlohmann::json& j) {
  ProbeMetric m;
  m.series = j.at("series").get<std::string>();
  m.x_name = j.at("x_name").get<std::string>();
  m.x = j.at("x").get<double>();
  m.value = j.at("value").get<double>();
  m.has_interval = j.contains("lo");
  if (m.has_interval) {
    m.lo = j.at("lo").get<double>();
    m.hi = j.at("hi").get<double>();
  }
  if (j.contains("grid")) {
    m.grid = j.at("grid").get<std::string>();
    m.y_name = j.at("y_name").get<std::string>();
    m.grid_y = j.at("grid_y").get<double>();
  }
  m.in_table = j.value("in_table", true);
  return m;
}

nlohmann::json to_json(const ProbeValues& v) {
  nlohmann::json j = {{"seed", v.seed}};
  for (const auto& [key, values] : v.values) {
    nlohmann::json list = nlohmann::json::array();
    for (const double x : values) {
      // Whole numbers as integers, so that outputs read "distances": [32, 64].
      if (std::floor(x) == x && std::abs(x) < 9e15) {
        list.push_back(static_cast<int64_t>(x));
      } else {
        list.push_back(x);
      }
    }
    j[key] = list;
  }
  return j;
}

ProbeValues probe_values_from_json(const nlohmann::json& j) {
  ProbeValues v;
  for (const auto& [key, value] : j.items()) {
    if (key == "seed") {
      v.seed = value.get<uint64_t>();
    } else {
      v.values[key] = value.get<std::vector<double>>();
    }
  }
  return v;
}

std::string format_probe_metrics(const std::string& probe,
                                 const std::vector<ProbeMetric>& metrics) {
  std::string out;
  std::string series;
  for (const auto& m : metrics) {
    if (!m.in_table) continue;
    if (m.series != series) {
      series = m.series;
      out += fmt::format("  {} {}\n", probe, series);
    }
    const std::string interval =
        m.has_interval ? fmt::format("  [{:.4f}, {:.4f}]", m.lo, m.hi) : std::string();
    out += fmt::format("    {:>14} {:>9g}  {:>10.4f}{}\n", m.x_name, m.x, m.value, interval);
  }
  return out;
}

}  // namespace txl
