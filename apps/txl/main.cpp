// txl: train and evaluate Transformer-XL language models; compare position encodings.
// main wires the subcommands and maps errors to exit codes:
//   0 ok, 1 runtime failure, 2 usage / configuration / input error.
#include <spdlog/fmt/fmt.h>

#include <CLI/CLI.hpp>

#include "txl/cli/commands.h"
#include "txl/cli/options.h"
#include "txl/platform/crash_report.h"
#include "txl/platform/runtime.h"
#include "txl/platform/torch_error.h"
#include "txl/util/env_variables.h"
#include "txl/util/error.h"

int main(int argc, char** argv) {
  txl::install_crash_report();
  txl::ensure_fast_blas(argc, argv);
  txl::reuse_freed_ram();
  CLI::App app{"txl: Transformer-XL language models and position-encoding length studies"};
  app.require_subcommand(1);
  int exit_code = txl::kExitOk;
  txl::setup_train(app, exit_code);
  txl::setup_eval(app, exit_code);
  txl::setup_info(app, exit_code);
  txl::setup_bench(app, exit_code);
  txl::setup_compare(app, exit_code);
  txl::setup_plot(app, exit_code);
  txl::setup_sample(app, exit_code);
  txl::setup_encodings(app, exit_code);
  txl::setup_study(app, exit_code);
  txl::setup_protocols(app, exit_code);
  txl::setup_export(app, exit_code);
  txl::setup_import(app, exit_code);
  txl::setup_config(app, exit_code);
  txl::refuse_out_of_range_integers(app);
  try {
    for (const auto& name : txl::check_env_variables()) {
      fmt::print(stderr,
                 "warning: {} is set, but txl reads no variable of that name (README: "
                 "Environment variables)\n",
                 name);
    }
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? txl::kExitOk : txl::kExitInputError;
  } catch (const txl::InputError& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return txl::kExitInputError;
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", txl::error_text(e));  // LibTorch's backtrace left out
    return txl::kExitRuntimeFailure;
  }
  return exit_code;
}
