// Export and import of weights (interop.h): every check first, then the files.
#include "txl/run/interop.h"

#include <spdlog/fmt/fmt.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <set>

#include "txl/run/run_dir.h"
#include "txl/util/error.h"
#include "txl/util/fs.h"
#include "txl/util/hash.h"
#include "txl/util/json.h"

namespace txl {

namespace fs = std::filesystem;

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

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

std::string escape_token(const std::string& t) {
  std::string out;
  for (const char ch : t) {
    switch (ch) {
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        out += ch;
    }
  }
  return out;
}

std::string unescape_token(const std::string& line, const std::string& where) {
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
  for (const auto& t : vocab.tokens()) out += escape_token(t) + "\n";
  return out;
}

Vocab read_vocab_text(const std::string& path, TokenizerKind kind) {
  const std::string text = read_regular_file(path, "a vocabulary, one token per line");
  std::vector<std::string> tokens;
  std::set<std::string> seen;
  size_t start = 0;
  int64_t line = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    ++line;
    const std::string where = fmt::format("{}:{}", path, line);
    const std::string token = unescape_token(text.substr(start, end - start), where);
    if (token.empty())
      throw InputError(where + ": an empty line (a token is at least one character)");
    if (!seen.insert(token).second)
      throw InputError(
          fmt::format("{}: token \"{}\" was already given", where, escape_token(token)));
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
  r.step = run.state.step;
  r.bytes = static_cast<double>(fs::file_size(r.weights));
  return r;
}

namespace {

WeightNaming naming_of(const ImportOptions& o, const WeightFile& file) {
  if (o.naming != "auto") return parse_weight_naming(o.naming, "--names");
  const auto meta = file.metadata.find("txl_names");
  if (meta != file.metadata.end())
    return parse_weight_naming(meta->second, o.weights + ": txl_names");
  for (const auto& t : file.tensors)
    if (t.name.rfind("word_emb.", 0) == 0 || t.name.rfind("layers.", 0) == 0)
      return WeightNaming::kReference;
  return WeightNaming::kTxl;
}

void check_finite(const WeightFile& file, const ImportOptions& o) {
  std::vector<std::string> bad;
  for (const auto& t : file.tensors) {
    if (!t.tensor.is_floating_point()) continue;
    const int64_t n = (~torch::isfinite(t.tensor)).sum().item<int64_t>();
    if (n > 0) bad.push_back(fmt::format("{} ({} of {} values)", t.name, n, t.tensor.numel()));
  }
  if (!bad.empty() && !o.allow_nonfinite) {
    throw InputError(fmt::format("{}: NaN or Inf in {}; pass --allow-nonfinite to import it anyway",
                                 o.weights, fmt::join(bad, ", ")));
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
  check_run_dir(o.run_dir, o.force);
  const Config config = config_from_json(read_json_file(o.config), o.config);
  const Vocab vocab = read_import_vocab(o, config.data.tokenizer);
  if (vocab.kind() != config.data.tokenizer) {
    throw InputError(fmt::format("{} is a {} vocabulary but {} says data.tokenizer \"{}\"", o.vocab,
                                 to_string(vocab.kind()), o.config,
                                 to_string(config.data.tokenizer)));
  }
  ImportResult r;
  WeightFile file;
  {
    const std::string bytes = read_regular_file(o.weights, "a weight file (.safetensors or .pt)");
    r.file_hash = xxh64(bytes.data(), bytes.size());
    file = parse_weight_file(bytes, o.weights);
  }
  r.naming = naming_of(o, file);
  check_finite(file, o);
  TransformerLM model = make_model(config.model, vocab.size(), torch::kCPU);
  try {
    load_named_weights(model, file.tensors, r.naming, o.weights);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}\n(the model is built from {} and the {} tokens of {})",
                                 e.what(), o.config, vocab.size(), o.vocab));
  }
  r.tensors = static_cast<int64_t>(file.tensors.size());
  for (const auto& p : model->parameters()) r.parameters += p.numel();

  prepare_run_dir(o.run_dir, o.force);
  RunPaths paths;
  paths.dir = o.run_dir;
  write_file_atomic(paths.config(), config_to_json(config).dump(2) + "\n");
  vocab.save(paths.vocab());
  TrainState state;
  state.config = config_to_json(config);
  state.vocab_checksum = vocab.checksum();
  save_checkpoint(paths.last_checkpoint(), state, model, nullptr, Memory{});
  nlohmann::json origin = {{"imported_from", fs::absolute(o.weights).string()},
                           {"xxh64", hex64(r.file_hash)},
                           {"names", to_string(r.naming)},
                           {"tensors", r.tensors},
                           {"config", o.config},
                           {"vocab", o.vocab},
                           {"imported_at", utc_now()}};
  write_file_atomic(paths.origin(), origin.dump(2) + "\n");
  return r;
}

}  // namespace txl
