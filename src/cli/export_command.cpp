// txl export --run DIR --out FILE.safetensors|FILE.pt [--names txl|reference]
//            [--checkpoint best|last] [--force]
// txl import --weights FILE --vocab FILE --config FILE --run-dir DIR
//            [--names auto|txl|reference] [--force] [--allow-nonfinite]
// Thin commands over run/interop.h.
#include <spdlog/fmt/fmt.h>

#include <filesystem>
#include <memory>

#include "txl/cli/commands.h"
#include "txl/cli/options.h"
#include "txl/run/interop.h"
#include "txl/util/text.h"

namespace txl {

namespace {

struct ExportCommandOptions {
  ExportOptions run;
  std::string names = "txl";
};

int run_export(ExportCommandOptions& o) {
  o.run.naming = parse_weight_naming(o.names, "--names");
  parse_checkpoint_choice(o.run.checkpoint, "--checkpoint");
  const ExportResult r = export_run(o.run);
  // The file read, by name: --checkpoint best falls back to checkpoint.pt where no best.pt is.
  fmt::print("exported {} ({} step {}, {} names): {} tensors, {}\n  {}\n  {}\n  {}\n",
             o.run.run_dir, std::filesystem::path(r.checkpoint).filename().string(), r.step,
             o.names, r.tensors, format_bytes(r.bytes), r.weights, r.config, r.vocab);
  return 0;
}

int run_import(const ImportOptions& o) {
  const ImportResult r = import_run(o);
  fmt::print("imported {} ({} names, {} tensors, {} parameters, XXH64 {:016x}) into {}\n",
             o.weights, to_string(r.naming), r.tensors, r.parameters, r.file_hash, o.run_dir);
  return 0;
}

}  // namespace

void setup_export(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<ExportCommandOptions>();
  auto* cmd = app.add_subcommand(
      "export",
      "Write a run's weights as .safetensors or a torch.save .pt, with its config and "
      "vocabulary beside them");
  cmd->add_option("--run", o->run.run_dir, "Run directory written by txl train or txl import")
      ->required();
  cmd->add_option("--out", o->run.out,
                  "FILE.safetensors or FILE.pt; FILE.config.json and FILE.vocab.txt go beside it")
      ->required();
  cmd->add_option("--names", o->names,
                  "txl (default): txl's parameter names; reference: the Transformer-XL "
                  "reference's MemTransformerLM state dict (relative encoding)");
  cmd->add_option("--checkpoint", o->run.checkpoint, "best (default) or last");
  cmd->add_flag("--force", o->run.force, "Replace output files that exist");
  cmd->callback([o, cmd, &exit_code] {
    refuse_empty_values(*cmd);
    exit_code = run_export(*o);
  });
}

void setup_import(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<ImportOptions>();
  auto* cmd = app.add_subcommand(
      "import",
      "Make a run directory from weights trained elsewhere (.safetensors or a torch.save "
      "state dict), for eval, compare, sample and the probes");
  cmd->add_option("--weights", o->weights, ".safetensors or a torch.save zip (.pt)")->required();
  cmd->add_option("--vocab", o->vocab,
                  "vocab.txt (one token per line, id order, with <unk>) or a run's vocab.json")
      ->required();
  cmd->add_option("--config", o->config,
                  "txl config the weights fit (an export's FILE.config.json, or written by hand)")
      ->required();
  cmd->add_option("--run-dir", o->run_dir, "Run directory to create")->required();
  cmd->add_option("--names", o->naming,
                  "auto (default: the file's own, else reference when its names are the "
                  "reference's), txl or reference");
  cmd->add_flag("--force", o->force, "Replace the run files of a non-empty run directory");
  cmd->add_flag("--allow-nonfinite", o->allow_nonfinite, "Import weights holding NaN or Inf");
  cmd->callback([o, cmd, &exit_code] {
    refuse_empty_values(*cmd);
    if (o->naming != "auto") parse_weight_naming(o->naming, "--names");
    exit_code = run_import(*o);
  });
}

}  // namespace txl
