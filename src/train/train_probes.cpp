// Probes during training (train_probes.h): train.probes parsed as eval's flags are, the
// whole run's plan checked before training, and each due step's probe runs scored on the
// validation split without moving the training's random stream.
#include "txl/train/train_probes.h"

#include <spdlog/fmt/fmt.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <utility>

#include "txl/util/error.h"
#include "txl/util/text.h"

namespace txl {

namespace {

constexpr const char* kKey = "train.probes";

// The run's probes see the validation split at the evaluated lengths, scored in fp32 as
// `txl eval --probes` scores them by default.
ProbeSubject train_probe_subject(const Config& config, const std::vector<int32_t>& valid,
                                 const Vocab& vocab, TransformerLM* model) {
  ProbeSubject s;
  s.model = model;
  s.ids = &valid;
  s.vocab = &vocab;
  s.config = &config;
  s.lengths = config.eval.lengths;
  s.precision = Precision::kFp32;
  return s;
}

// The whole run's probing past train.probe_max_tokens, refused with its figures.
void check_train_probe_budget(const TrainConfig& train, const TrainProbePlan& plan) {
  if (plan.total() <= train.probe_max_tokens) return;
  std::string each;
  for (const auto& p : plan.probes)
    each += fmt::format("{}{} {:.3g} ({})", each.empty() ? "" : ", ", p.probe->name, p.tokens,
                        p.probe->cost);
  throw InputError(fmt::format(
      "{} \"{}\": {} probe runs (every train.probe_interval = {} steps of train.max_steps = {}) x "
      "{:.3g} tokens each ({}) = {:.3g} tokens forwarded, past train.probe_max_tokens = {:.3g}: "
      "raise train.probe_interval, make the probes' options smaller, or raise "
      "train.probe_max_tokens",
      kKey, train.probes, plan.runs, train.probe_interval, train.max_steps, plan.tokens, each,
      plan.total(), train.probe_max_tokens));
}

// "copy gain (nats/token) 2.31 (mean of 3)": the first series of a probe's output, averaged
// over its x, for the progress line.
std::string headline(const ProbeOutput& output) {
  const auto& metrics = output.run.metrics;
  if (metrics.empty()) return "no metrics";
  double sum = 0;
  int n = 0;
  for (const auto& m : metrics) {
    if (m.series != metrics.front().series) continue;
    sum += m.value;
    n += 1;
  }
  return fmt::format("{} {:.4f}{}", metrics.front().series, sum / n,
                     n > 1 ? fmt::format(" (mean over {} {})", n, metrics.front().x_name) : "");
}

}  // namespace

ProbeRequest train_probe_request(const TrainConfig& train) {
  std::vector<std::string> words;
  for (const auto& w : split(train.probes, ' ')) {
    if (!w.empty()) words.push_back(w);
  }
  if (words.empty()) return {};
  if (words.front().find('=') != std::string::npos) {
    throw InputError(std::string(kKey) + " \"" + train.probes +
                     "\" must start with the probe names (e.g. \"copy copy.count=50\"); expected "
                     "one of " +
                     join(probe_names()));
  }
  const std::vector<std::string> sets(words.begin() + 1, words.end());
  ProbeRequest request = parse_probe_request(words.front(), sets, 1, kKey, kKey);
  // The whole run's total is checked instead (check_train_probe_budget).
  request.max_tokens = std::numeric_limits<double>::infinity();
  return request;
}

TrainProbePlan plan_train_probes(const Config& config, const std::vector<int32_t>& valid,
                                 const Vocab& vocab, bool print) {
  TrainProbePlan plan;
  const ProbeRequest request = train_probe_request(config.train);
  if (request.names.empty()) return plan;
  if (config.train.probe_interval < 1)  // validate() refuses it too; the division below needs it
    throw InputError(
        fmt::format("train.probe_interval ({}) must be >= 1", config.train.probe_interval));
  try {
    plan.probes = plan_probes(request, train_probe_subject(config, valid, vocab, nullptr), kKey);
  } catch (const InputError& e) {  // a probe's own check names its option, not the key
    const std::string what = e.what();
    if (what.rfind(kKey, 0) == 0) throw;
    throw InputError(std::string(kKey) + " \"" + config.train.probes +
                     "\" on the validation split: " + what);
  }
  plan.runs = config.train.max_steps / config.train.probe_interval;
  for (const auto& p : plan.probes) plan.tokens += p.tokens;
  check_train_probe_budget(config.train, plan);
  if (print) {
    fmt::print(stderr,
               "probes: {} every {} steps on the validation split, {} runs of {:.3g} tokens "
               "({:.3g} in all)\n",
               join(request.names), config.train.probe_interval, plan.runs, plan.tokens,
               plan.total());
  }
  return plan;
}

nlohmann::json train_probe_line(const ProbeOutput& output, int64_t step) {
  nlohmann::json metrics = nlohmann::json::array();
  for (const auto& m : output.run.metrics) {
    const nlohmann::json x = std::isfinite(m.x) ? nlohmann::json(m.x) : nlohmann::json();
    metrics.push_back({{"series", m.series}, {"x", x}, {"value", m.value}});
  }
  return {
      {"probe", output.name}, {"step", step}, {"metrics", metrics}, {"seconds", output.seconds}};
}

TrainProbes::TrainProbes(const Config& config, const Corpus& corpus)
    : config_(config),
      corpus_(corpus),
      plan_(plan_train_probes(config, corpus.valid, corpus.vocab)) {}

bool TrainProbes::due(int64_t step) const {
  return !plan_.probes.empty() && step % config_.train.probe_interval == 0;
}

std::vector<nlohmann::json> TrainProbes::run(TransformerLM& model, at::Generator& generator,
                                             int64_t step) {
  // Scoring must not move the stream dropout draws from (validate_and_checkpoint does the
  // same), nor leave the model in eval mode.
  const torch::Tensor rng = generator.get_state();
  model->eval();
  const ProbeSubject subject = train_probe_subject(config_, corpus_.valid, corpus_.vocab, &model);
  std::vector<nlohmann::json> lines;
  for (const auto& p : plan_.probes) {
    const auto start = std::chrono::steady_clock::now();
    nlohmann::json partial;
    {
      torch::NoGradGuard no_grad;
      partial = p.probe->score(subject, p.values, ProbeShard{}, [](double) {});
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const ProbeOutput out = finish_probe(p.probe->name, p.values, {std::move(partial)}, seconds);
    fmt::print(stderr, "probe @ step {:>6} | {}: {} | {:.1f} s\n", step, out.name, headline(out),
               seconds);
    lines.push_back(train_probe_line(out, step));
  }
  generator.set_state(rng);
  model->train();
  return lines;
}

}  // namespace txl
