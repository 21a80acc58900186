// Export and import of weights (interop.h): every check first, then the files.
#include "txl/run/interop.h"

#include <spdlog/fmt/fmt.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <set>

#include "txl/model/model_size.h"
#include "txl/platform/resources.h"
#include "txl/run/run_dir.h"
#include "txl/util/error.h"
#include "txl/util/fs.h"
#include "txl/util/hash.h"
#include "txl/util/json.h"
#include "txl/util/text.h"

namespace txl {

namespace fs = std::filesystem;

namespace {

// NAME of DIR/NAME.safetensors or DIR/NAME.pt, with its folder.
std::string stem_of(const std::string& out) {
  for (const char* ext : {".safetensors", ".pt"})
    if (ends_with(out, ext) && out.size() > std::string(ext).size() &&
        out[out.size() - std::string(ext).size() - 1] != '/')
      return out.substr(0, out.size() - std::string(ext).size());
  throw InputError(
      fmt::format("--out {}: expected a file name ending in .safetensors (any "
                  "program) or .pt (PyTorch's torch.load)",
                  out));
}

// An output of export: not a file of the run it reads, not something that exists (without
// force), not something other than a regular file, in a folder that can be written.
void check_output(const std::string& path, const ExportOptions& o, const RunPaths& run) {
  const std::string key = same_file_key(path);
  for (const auto& name : run_file_names()) {
    if (key == same_file_key(run.dir + "/" + name))
      throw InputError(
          fmt::format("--out: {} is the run's own {}; write the export elsewhere", path, name));
  }
  check_not_special(path, "a file export writes");
  if (!o.force && file_kind(path) != FileKind::kMissing)
    throw InputError(fmt::format("{} exists; pass --force to replace it", path));
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty() && !is_directory(parent.string()))
    throw InputError(fmt::format("--out {}: the folder {} does not exist", o.out, parent.string()));
}

std::string unescape_line(const std::string& line, const std::string& where) {
  std::string out;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] != '\\') {
      out += line[i];
      continue;
    }
    const char next = i + 1 < line.size() ? line[i + 1] : '\0';
    const char* map = next == '\\'  ? "\\"
                      : next == 'n' ? "\n"
                      : next == 'r' ? "\r"
                      : next == 't' ? "\t"
                                    : nullptr;
    if (!map)
      throw InputError(where +
                       ": a backslash must start \\\\, \\n, \\r or \\t (vocab.txt escapes)");
    out += map;
    ++i;
  }
  return out;
}

}  // namespace

std::string vocab_text(const Vocab& vocab) {
  std::string out;
  for (const auto& t : vocab.tokens()) out += escape_line(t) + "\n";
  return out;
}

Vocab read_vocab_text(const std::string& path, TokenizerKind kind) {
  const std::string text = read_regular_file(path, "a vocabulary, one token per line");
  if (text.compare(0, 3, "\xEF\xBB\xBF") == 0)
    throw InputError(path +
                     ": starts with a UTF-8 byte-order mark (bytes EF BB BF), which would "
                     "be part of the first token; save the file without one");
  std::vector<std::string> tokens;
  std::set<std::string> seen;
  size_t start = 0;
  int64_t line = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    ++line;
    const std::string where = fmt::format("{}:{}", path, line);
    if (end > start && text[end - 1] == '\r')
      throw InputError(where +
                       ": ends with a carriage return (a Windows line end); save the file with "
                       "\\n line ends (a token's own carriage return is written \\r)");
    const std::string token = unescape_line(text.substr(start, end - start), where);
    if (token.empty())
      throw InputError(where + ": an empty line (a token is at least one character)");
    if (!seen.insert(token).second)
      throw InputError(
          fmt::format("{}: token \"{}\" was already given", where, escape_line(token)));
    tokens.push_back(token);
    start = end + 1;
  }
  if (tokens.empty()) throw InputError(path + ": no tokens");
  if (!seen.count(kUnkToken)) {
    throw InputError(
        fmt::format("{}: no {} token; txl maps every token it has not seen to it, so "
                    "the vocabulary must hold it (add a line {} and a row for it)",
                    path, kUnkToken, kUnkToken));
  }
  if (kind == TokenizerKind::kBpe || kind == TokenizerKind::kUnigram)
    throw InputError(path + ": a subword vocabulary needs its model; pass the run's vocab.json");
  return Vocab(kind, std::move(tokens));
}

ExportResult export_run(const ExportOptions& o) {
  RunPaths paths;
  paths.dir = o.run_dir;
  const std::string stem = stem_of(o.out);
  ExportResult r;
  r.weights = o.out;
  r.config = stem + ".config.json";
  r.vocab = stem + ".vocab.txt";
  auto run = load_run(o.run_dir, o.checkpoint);
  const auto tensors = named_weights(run.model, o.naming);
  for (const auto& f : {r.weights, r.config, r.vocab}) check_output(f, o, paths);
  const std::string config = config_to_json(run.config).dump(2) + "\n";
  if (ends_with(o.out, ".pt")) {
    write_torch_dict(r.weights, tensors);
  } else {
    write_safetensors(r.weights, tensors,
                      {{"format", "pt"},
                       {"txl_config", config},
                       {"txl_names", to_string(o.naming)},
                       {"txl_run", o.run_dir},
                       {"txl_step", std::to_string(run.state.step)}});
  }
  write_file_atomic(r.config, config);
  write_file_atomic(r.vocab, vocab_text(run.vocab));
  r.tensors = static_cast<int64_t>(tensors.size());
  r.checkpoint = checkpoint_file(paths, o.checkpoint);
  r.step = run.state.step;
  r.bytes = static_cast<double>(fs::file_size(r.weights));
  return r;
}

namespace {

WeightNaming naming_of(const ImportOptions& o, const WeightReader& file) {
  if (o.naming != "auto") return parse_weight_naming(o.naming, "--names");
  const auto meta = file.metadata().find("txl_names");
  if (meta != file.metadata().end())
    return parse_weight_naming(meta->second, o.weights + ": txl_names");
  for (const auto& t : file.index())
    if (t.name.rfind("word_emb.", 0) == 0 || t.name.rfind("layers.", 0) == 0)
      return WeightNaming::kReference;
  return WeightNaming::kTxl;
}

// A tensor as it is read: NaN or Inf refused by name unless allow_nonfinite.
void check_finite(const std::string& name, const torch::Tensor& t, const ImportOptions& o) {
  if (!t.is_floating_point() || o.allow_nonfinite) return;
  const int64_t n = (~torch::isfinite(t)).sum().item<int64_t>();
  if (n > 0) {
    throw InputError(
        fmt::format("{}: NaN or Inf in {} ({} of {} values); pass --allow-nonfinite "
                    "to import it anyway",
                    o.weights, name, n, t.numel()));
  }
}

// Import reads --weights, --config and --vocab and, with --force, removes or replaces every run
// file of --run-dir: none of its inputs may be one of them (a user's best.pt imported into its
// own folder would be deleted before it was read again; origin.json would name a lost file).
void check_inputs_survive(const ImportOptions& o) {
  const std::vector<std::pair<const char*, std::string>> inputs = {
      {"--weights", o.weights}, {"--config", o.config}, {"--vocab", o.vocab}};
  for (const auto& name : run_file_names()) {
    const std::string key = same_file_key(o.run_dir + "/" + name);
    for (const auto& [option, path] : inputs) {
      if (same_file_key(path) != key) continue;
      throw InputError(fmt::format(
          "{} {} is the run directory's own {}, which import {}; copy it out of {} first, or "
          "import into another --run-dir",
          option, path, name, o.force ? "with --force replaces or removes" : "writes", o.run_dir));
    }
  }
}

// The memory import needs, checked before the model is built: the model's fp32 weights, as
// much again while its checkpoint is written, and the largest tensor of the file twice (as
// read, and converted to the model's precision).
void check_import_footprint(const Config& config, int64_t vocab_size, const WeightReader& file,
                            const ImportOptions& o) {
  const double parameters = parameter_count(config.model, vocab_size);
  double largest = 0;
  for (const auto& t : file.index()) largest = std::max(largest, double(t.tensor.nbytes()));
  const double need = 2 * 4 * parameters + 2 * largest;
  const double available = available_ram_bytes();
  if (available > 0 && need > available) {
    throw InputError(fmt::format(
        "{} builds a model of {:.0f} parameters: importing it needs about {:.2f} GB (its fp32 "
        "weights, as much again to write its checkpoint, and {:.2f} GB for the largest tensor "
        "of {}), and {:.2f} GB is available here (the machine's free memory, a cgroup's limit "
        "or TXL_MEMORY_LIMIT_MB)",
        o.config, parameters, need / 1e9, 2 * largest / 1e9, o.weights, available / 1e9));
  }
}

Vocab read_import_vocab(const ImportOptions& o, TokenizerKind kind) {
  if (ends_with(o.vocab, ".json")) return Vocab::load(o.vocab);
  // As vocab.json will be read back: the tokenizer's own rules (a word vocabulary's <eos>).
  return Vocab::from_json(read_vocab_text(o.vocab, kind).to_json(), o.vocab);
}

}  // namespace

std::string utc_now() {
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

ImportResult import_run(const ImportOptions& o) {
  // Checks that need nothing read: the folder, the inputs against what --force removes, and
  // a run being trained there (its lock is held from here to the end when the folder exists).
  check_run_dir(o.run_dir, o.force);
  check_inputs_survive(o);
  std::unique_ptr<RunLock> lock;
  if (is_directory(o.run_dir)) lock = std::make_unique<RunLock>(o.run_dir);

  const Config config = config_from_json(read_json_file(o.config), o.config);
  const Vocab vocab = read_import_vocab(o, config.data.tokenizer);
  if (vocab.kind() != config.data.tokenizer) {
    throw InputError(fmt::format("{} is a {} vocabulary but {} says data.tokenizer \"{}\"", o.vocab,
                                 to_string(vocab.kind()), o.config,
                                 to_string(config.data.tokenizer)));
  }
  // The file's header or pickle only; its tensors are read one by one once they have matched.
  const WeightReader file = open_weight_file(o.weights);
  ImportResult r;
  r.naming = naming_of(o, file);
  check_import_footprint(config, vocab.size(), file, o);
  TransformerLM model = make_model(config.model, vocab.size(), torch::kCPU);
  try {
    load_named_weights(
        model, file.index(),
        [&](size_t i) {
          auto t = file.read(i);
          check_finite(file.index()[i].name, t, o);
          return t;
        },
        r.naming, o.weights);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}\n(the model is built from {} and the {} tokens of {})",
                                 e.what(), o.config, vocab.size(), o.vocab));
  }
  r.file_hash = xxh64_of(file.source());
  r.tensors = static_cast<int64_t>(file.index().size());
  for (const auto& p : model->parameters()) r.parameters += p.numel();

  prepare_run_dir(o.run_dir, o.force);
  if (!lock) lock = std::make_unique<RunLock>(o.run_dir);
  RunPaths paths;
  paths.dir = o.run_dir;
  write_file_atomic(paths.config(), config_to_json(config).dump(2) + "\n");
  vocab.save(paths.vocab());
  TrainState state;
  state.config = config_to_json(config);
  state.vocab_checksum = vocab.checksum();
  save_checkpoint(paths.last_checkpoint(), state, model, nullptr, Memory{});
  // Every path as given and absolute, so that origin.json says the same of all three.
  nlohmann::json origin = {{"imported_from", fs::absolute(o.weights).string()},
                           {"xxh64", hex64(r.file_hash)},
                           {"names", to_string(r.naming)},
                           {"tensors", r.tensors},
                           {"config", fs::absolute(o.config).string()},
                           {"vocab", fs::absolute(o.vocab).string()},
                           {"imported_at", utc_now()}};
  write_file_atomic(paths.origin(), origin.dump(2) + "\n");
  return r;
}

}  // namespace txl
