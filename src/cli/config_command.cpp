// txl config --schema: the JSON Schema of a run configuration (config/config_schema.h),
// generated from the key tables. configs/schema.json is this output; editors and CI tools
// that read JSON Schema check a config against it (a misspelt key is refused).
#include <spdlog/fmt/fmt.h>

#include <memory>

#include "txl/cli/commands.h"
#include "txl/config/config_schema.h"
#include "txl/util/error.h"

namespace txl {

void setup_config(CLI::App& app, int& exit_code) {
  auto schema = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand(
      "config", "Describe the run configuration: --schema prints its JSON Schema (draft 2020-12)");
  cmd->add_flag("--schema", *schema,
                "Print the JSON Schema of a run configuration, generated from txl's key table "
                "(configs/schema.json is this output)");
  cmd->callback([schema, &exit_code] {
    if (!*schema) {
      throw InputError(
          "txl config needs --schema: `txl config --schema` prints the configuration's JSON "
          "Schema (the keys, their types, ranges, defaults and descriptions)");
    }
    fmt::print("{}", config_schema_text());
    exit_code = kExitOk;
  });
}

}  // namespace txl
