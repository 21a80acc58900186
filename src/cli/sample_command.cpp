// txl sample --run DIR [--prompt TEXT] [--tokens N] [--temperature T] [--top-k K] [--seed S]
//
// Out-of-vocabulary prompts: word runs map unknown words to <unk> and say so on stderr;
// char runs refuse (exit 2) and name the characters, because a character the model never
// saw has no embedding worth conditioning on, and silently replacing it would change the
// prompt's meaning one character at a time.
#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>

#include "txl/cli/commands.h"
#include "txl/cli/options.h"
#include "txl/data/tokenizer.h"
#include "txl/data/tokenizers.h"
#include "txl/model/sampling.h"
#include "txl/platform/device.h"
#include "txl/platform/runtime.h"
#include "txl/run/run_dir.h"
#include "txl/util/error.h"
#include "txl/util/utf8.h"

namespace txl {

namespace {

struct SampleCommandOptions {
  std::string run_dir;
  std::string prompt;
  std::string checkpoint = "best";
  int64_t tokens = 200;
  double temperature = 1.0;
  int64_t top_k = 0;
  int64_t seed = 1;                // signed, so that -1 is refused instead of wrapping to 2^64 - 1
  std::optional<int64_t> context;  // unset: the longest context seen in training
  int64_t threads = 0;
  std::string device = "cpu";
};

// The most tokens one call generates: ten million take hours on a CPU (a small model samples
// on the order of a thousand tokens per second), and their ids and text stay well inside
// memory; a larger number is a typo.
constexpr int64_t kMaxSampleTokens = 10'000'000;

std::string code_point_name(const std::string& ch) {
  size_t pos = 0;
  const char32_t cp = next_code_point(ch, &pos, "--prompt");
  if (ch == "\n") return "'\\n' (U+000A)";
  return fmt::format("'{}' (U+{:04X})", ch, static_cast<uint32_t>(cp));
}

// Prompt text -> ids. Word and subword prompts get no trailing <eos> unless the text ends a
// line; a subword model has a piece (or bytes) for every character.
std::vector<int64_t> encode_prompt(const std::string& prompt, const Vocab& vocab) {
  if (vocab.subword() != nullptr) {
    if (prompt.empty()) return {};
    const auto ids = encode(prompt, vocab, "--prompt");
    const bool drop_eos = prompt.back() != '\n';
    return {ids.begin(), ids.end() - (drop_eos ? 1 : 0)};
  }
  auto pieces = split_tokens(prompt, vocab.kind(), "--prompt");
  if (vocab.kind() == TokenizerKind::kWord && !pieces.empty() && pieces.back() == kEosToken &&
      (prompt.empty() || prompt.back() != '\n')) {
    pieces.pop_back();
  }
  std::vector<int64_t> ids;
  std::vector<std::string> unknown;
  for (const auto& p : pieces) {
    if (!vocab.contains(p) && p != kUnkToken) {
      if (std::find(unknown.begin(), unknown.end(), p) == unknown.end()) unknown.push_back(p);
    }
    ids.push_back(vocab.id(p));
  }
  if (!unknown.empty()) {
    std::string list;
    for (size_t i = 0; i < unknown.size(); ++i) {
      list += (i ? ", " : "") + (vocab.kind() == TokenizerKind::kChar ? code_point_name(unknown[i])
                                                                      : "\"" + unknown[i] + "\"");
    }
    if (tokenizer_def(vocab.kind()).per_symbol) {
      const char* what = vocab.kind() == TokenizerKind::kByte ? "bytes" : "characters";
      throw InputError(
          fmt::format("--prompt has {} outside the run's vocabulary: {}; the model "
                      "never saw them in training. Remove or replace them",
                      what, list));
    }
    fmt::print(
        stderr,
        "note: {} prompt word(s) are not in the run's vocabulary and were mapped to <unk>: {}\n",
        unknown.size(), list);
  }
  return ids;
}

// The token generation starts from when the prompt is empty: the start of a line.
int64_t start_token(const Vocab& vocab) {
  if (tokenizer_def(vocab.kind()).eos_per_line) return vocab.id(kEosToken);
  if (vocab.contains("\n")) return vocab.id("\n");
  return vocab.unk_id() == 0 && vocab.size() > 1 ? 1 : 0;  // the most frequent token
}

int run_sample(const SampleCommandOptions& o) {
  parse_checkpoint_choice(o.checkpoint, "--checkpoint");
  if (o.tokens < 1 || o.tokens > kMaxSampleTokens) {
    throw InputError("--tokens " + std::to_string(o.tokens) + " is not valid; expected 1 to " +
                     std::to_string(kMaxSampleTokens) + " tokens");
  }
  if (o.seed < 0)
    throw InputError("--seed " + std::to_string(o.seed) + " is not valid; expected a seed >= 0");
  if (!(o.temperature > 0.0) || !std::isfinite(o.temperature)) {
    throw InputError(fmt::format("--temperature must be a number > 0, got {}", o.temperature));
  }
  if (o.top_k < 0)
    throw InputError("--top-k must be >= 0 (0 = the whole vocabulary), got " +
                     std::to_string(o.top_k));
  // The default is asked for by leaving --context out, so no number silently stands for it.
  if (o.context && *o.context < 1) {
    throw InputError("--context " + std::to_string(*o.context) +
                     " is not valid; expected >= 1 tokens (leave --context out for the longest "
                     "context seen in training)");
  }
  check_threads(o.threads, "--threads");
  check_utf8(o.prompt, "--prompt");
  const torch::Device device = resolve_device(o.device, "--device");
  auto run = load_run(o.run_dir, o.checkpoint, device);
  auto prompt = encode_prompt(o.prompt, run.vocab);
  set_threads(o.threads);

  const auto& t = run.config.train;
  const bool memory = run.model->has_memory();
  SamplingOptions options;
  options.tokens = o.tokens;
  options.temperature = o.temperature;
  options.top_k = o.top_k;
  options.seed = static_cast<uint64_t>(o.seed);
  options.chunk = t.tgt_len;
  // Default context: the most a query saw in training, so no unseen distance or position
  // comes up. Memory: tgt_len + mem_len - 1 earlier tokens. Absolute: windows of tgt_len.
  options.context = o.context ? *o.context
                    : memory  ? std::max<int64_t>(1, t.tgt_len + t.mem_len - 1)
                              : t.tgt_len;
  const bool empty_prompt = prompt.empty();
  if (empty_prompt) prompt.push_back(start_token(run.vocab));
  fmt::print(
      stderr,
      "sampling {} tokens from {} ({}, {} step {}) | {} {} | temperature {} | top-k {} | seed {}\n",
      o.tokens, o.run_dir, to_string(run.config.model.pos_encoding), o.checkpoint, run.state.step,
      memory ? "memory" : "window", options.context, o.temperature, o.top_k, o.seed);

  const auto ids = sample_tokens(run.model, prompt, options);
  std::string text = decode(ids, run.vocab);
  if (run.vocab.kind() == TokenizerKind::kWord && !o.prompt.empty() && o.prompt.back() != '\n' &&
      o.prompt.back() != ' ' && !text.empty() && text.front() != '\n') {
    text = " " + text;
  }
  fmt::print("{}{}\n", o.prompt, text);
  return 0;
}

}  // namespace

void setup_sample(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<SampleCommandOptions>();
  auto* cmd = app.add_subcommand("sample", "Generate text from a trained run");
  cmd->add_option("--run", o->run_dir, "Run directory written by txl train")->required();
  cmd->add_option("--prompt", o->prompt, "Text to continue (UTF-8; default: start of a line)");
  cmd->add_option("--tokens", o->tokens, "Tokens to generate (default 200)");
  cmd->add_option("--temperature", o->temperature, "Softmax temperature, > 0 (default 1)");
  cmd->add_option("--top-k", o->top_k, "Sample among the k most likely tokens (0 = all, default)");
  cmd->add_option("--seed", o->seed, "Random seed; the same seed gives the same text (default 1)");
  cmd->add_option("--context", o->context,
                  "Context in tokens: memory kept (relative) or window (absolute); default: the "
                  "longest context "
                  "seen in training");
  cmd->add_option("--checkpoint", o->checkpoint, "best or last");
  cmd->add_option("--threads", o->threads, "Threads, 0 to 1024 (0 = all cores)");
  cmd->add_option("--device", o->device, "cpu, cuda, cuda:N or auto (cuda:0 if there is one)");
  cmd->callback([o, cmd, &exit_code] {
    refuse_empty_values(*cmd, {"--prompt"});  // an empty prompt: start at a line's start
    exit_code = run_sample(*o);
  });
}

}  // namespace txl
