// The subcommands of `txl`. Each registers itself on the app with its options; running it
// happens in CLI11's callback, and its exit code is written to `exit_code`.
// Errors are exceptions: InputError (exit 2) or anything else (exit 1), mapped in main.
#pragma once

#include <CLI/CLI.hpp>

namespace txl {

void setup_train(CLI::App& app, int& exit_code);
void setup_eval(CLI::App& app, int& exit_code);
void setup_info(CLI::App& app, int& exit_code);
void setup_bench(CLI::App& app, int& exit_code);
void setup_compare(CLI::App& app, int& exit_code);
void setup_plot(CLI::App& app, int& exit_code);
void setup_config(CLI::App& app, int& exit_code);
void setup_sample(CLI::App& app, int& exit_code);
void setup_encodings(CLI::App& app, int& exit_code);
void setup_study(CLI::App& app, int& exit_code);
void setup_protocols(CLI::App& app, int& exit_code);
void setup_export(CLI::App& app, int& exit_code);
void setup_import(CLI::App& app, int& exit_code);

}  // namespace txl
