// txl encodings: every registered position encoding with its formula, whether it takes
// memory, its own config keys and the evaluation aids it accepts. Read from the registry
// (config/encodings.h), so the list cannot fall behind the code.
#include <spdlog/fmt/fmt.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "txl/cli/commands.h"
#include "txl/cli/options.h"
#include "txl/cli/output_path.h"
#include "txl/config/encodings.h"
#include "txl/util/text.h"

namespace txl {

namespace {

struct EncodingsOptions {
  std::string json_path;
};

std::string option_text(const EncodingOption& o) {
  return fmt::format("{}={:g} [{:g}, {:g}]", o.key, o.default_value, o.min, o.max);
}

std::vector<std::string> aid_texts(const EncodingTraits& t) {
  std::vector<std::string> out;
  for (const auto aid : t.aids) out.push_back(to_string(aid));
  return out;
}

nlohmann::json encodings_json() {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& t : encoding_registry()) {
    nlohmann::json options = nlohmann::json::array();
    for (const auto& o : t.options) {
      options.push_back({{"key", std::string("model.") + o.key},
                         {"default", o.default_value},
                         {"min", o.min},
                         {"max", o.max},
                         {"integer", o.integer},
                         {"doc", o.doc}});
    }
    rows.push_back({{"name", t.name},
                    {"formula", t.formula},
                    {"memory", t.takes_memory},
                    {"clamp_len", t.uses_clamp_len},
                    {"length_limit",
                     t.length_limit_key ? nlohmann::json(std::string("model.") + t.length_limit_key)
                                        : nlohmann::json()},
                    {"options", options},
                    {"aids", aid_texts(t)}});
  }
  return rows;
}

int run_encodings(const EncodingsOptions& o) {
  check_output_path(o.json_path, "--json");
  fmt::print("{:<17} {:<6} {}\n", "encoding", "memory", "score (query i, key j; n = i - j)");
  for (const auto& t : encoding_registry()) {
    fmt::print("{:<17} {:<6} {}\n", t.name, t.takes_memory ? "yes" : "no", t.formula);
    std::vector<std::string> extras;
    for (const auto& option : t.options) extras.push_back("model." + option_text(option));
    if (t.uses_clamp_len) extras.emplace_back("model.clamp_len / --clamp-len");
    if (t.uses_max_rel_dist) extras.emplace_back("model.max_rel_dist");
    if (!extras.empty()) fmt::print("{:<24} options: {}\n", "", join(extras));
    if (!t.aids.empty()) fmt::print("{:<24} --aid: {}\n", "", join(aid_texts(t)));
  }
  fmt::print(
      "\nmemory: works with train.mem_len > 0 and txl eval --method memory. Set one with "
      "--set model.pos_encoding=NAME; an option of another encoding is refused.\n");
  if (!o.json_path.empty()) write_json_output(o.json_path, encodings_json());
  return 0;
}

}  // namespace

void setup_encodings(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<EncodingsOptions>();
  auto* cmd = app.add_subcommand(
      "encodings", "List the position encodings: formula, memory, options and evaluation aids");
  cmd->add_option("--json", o->json_path, "Also write the list as JSON to this file");
  cmd->callback([o, cmd, &exit_code] {
    refuse_empty_values(*cmd);
    exit_code = run_encodings(*o);
  });
}

}  // namespace txl
