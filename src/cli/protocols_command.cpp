// txl protocols: every registered evaluation protocol (--method) with what it scores, what
// it costs, the options it reads and whether it needs memory, then every probe (--probes)
// with what it measures, its cost and its options. Read from the registries
// (eval/protocol.h, probe/probe.h), so the list cannot fall behind the code.
#include <spdlog/fmt/fmt.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "txl/cli/commands.h"
#include "txl/cli/options.h"
#include "txl/cli/output_path.h"
#include "txl/eval/protocol.h"
#include "txl/probe/probe.h"
#include "txl/util/text.h"

namespace txl {

namespace {

struct ProtocolsOptions {
  std::string json_path;
};

nlohmann::json probes_json() {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& p : probe_registry()) {
    nlohmann::json options = nlohmann::json::array();
    for (const auto& o : p.options) {
      options.push_back({{"key", std::string(p.name) + "." + o.key},
                         {"min", o.min},
                         {"max", o.max},
                         {"integer", o.integer},
                         {"list", o.list},
                         {"doc", o.doc}});
    }
    rows.push_back({{"name", p.name},
                    {"description", p.description},
                    {"cost", p.cost},
                    {"group", p.group != nullptr},
                    {"options", options}});
  }
  return rows;
}

void print_probes() {
  fmt::print("\nprobes (--probes NAME,...; options with --probe-set PROBE.KEY=V[,V...]):\n");
  for (const auto& p : probe_registry()) {
    fmt::print("{:<11} {}\n", p.name, p.description);
    fmt::print("{:<11} cost: {}\n", "", p.cost);
    for (const auto& o : p.options) {
      // Whole-number options read as such (16777216, not 1.67772e+07).
      const auto bound = [&](double v) {
        return o.integer ? fmt::format("{:.0f}", v) : fmt::format("{:g}", v);
      };
      fmt::print("{:<11} {}.{}: {} ({}{} to {})\n", "", p.name, o.key, o.doc,
                 o.list ? "values " : "", bound(o.min), bound(o.max));
    }
  }
}

nlohmann::json protocols_json() {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& p : eval_protocols()) {
    nlohmann::json options = nlohmann::json::array();
    for (const auto& s : p.settings) {
      options.push_back(
          {{"name", s.name},
           {"flag", s.flag},
           {"study_key", s.study_key ? nlohmann::json(s.study_key) : nlohmann::json()},
           {"switch", s.is_switch},
           {"min", s.min},
           {"max", s.max},
           {"unset", s.unset},
           {"doc", s.doc}});
    }
    rows.push_back({{"name", p.name},
                    {"description", p.description},
                    {"cost", p.cost},
                    {"needs_memory", p.needs_memory},
                    {"options", options}});
  }
  return rows;
}

int run_protocols(const ProtocolsOptions& o) {
  check_output_path(o.json_path, "--json");
  fmt::print("{:<11} {:<6} {}\n", "method", "memory", "what is scored");
  for (const auto& p : eval_protocols()) {
    fmt::print("{:<11} {:<6} {}\n", p.name, p.needs_memory ? "yes" : "no", p.description);
    fmt::print("{:<18} cost: {}\n", "", p.cost);
    for (const auto& s : p.settings) {
      fmt::print("{:<18} {}{}: {}\n", "", s.flag,
                 s.study_key ? fmt::format(" (study: eval.{})", s.study_key) : std::string(),
                 s.doc);
    }
  }
  fmt::print(
      "\nmemory = yes: only for encodings that carry memory (txl encodings). Choose one with "
      "txl eval --method NAME, or a study's eval.methods.\n");
  print_probes();
  if (!o.json_path.empty()) {
    write_json_output(o.json_path, {{"protocols", protocols_json()}, {"probes", probes_json()}});
  }
  return 0;
}

}  // namespace

void setup_protocols(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<ProtocolsOptions>();
  auto* cmd = app.add_subcommand(
      "protocols",
      "List the evaluation protocols (--method) and the probes (--probes): what each "
      "measures, its cost, its options");
  cmd->add_option("--json", o->json_path, "Also write the list as JSON to this file");
  cmd->callback([o, cmd, &exit_code] {
    refuse_empty_values(*cmd);
    exit_code = run_protocols(*o);
  });
}

}  // namespace txl
