#include "txl/eval/cache.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "txl/eval/protocol.h"
#include "txl/util/fs.h"
#include "txl/util/hash.h"
#include "txl/util/json.h"

namespace txl {

namespace {

// 2: learned_absolute interpolation over the trained rows; 3: entries carry a digest.
constexpr int kCacheVersion = 4;

// What a result's own numbers must satisfy: finite, non-negative NLLs (a token's NLL is
// -log p with p <= 1) whose windows add up to the total, tokens counted the same way by the
// windows and the position buckets. Empty when they do; else what does not hold.
std::string inconsistency(const EvalResult& r) {
  if (r.window_nll.size() != r.window_tokens.size() || r.window_nll.empty())
    return "window_nll and window_tokens differ in length or are empty";
  if (!std::isfinite(r.nll) || r.nll < 0) return "nll_sum is not a finite NLL >= 0";
  double nll = 0;
  int64_t tokens = 0;
  for (size_t i = 0; i < r.window_nll.size(); ++i) {
    if (!std::isfinite(r.window_nll[i]) || r.window_nll[i] < 0 || r.window_tokens[i] < 1)
      return fmt::format("window {} has NLL {} over {} tokens", i, r.window_nll[i],
                         r.window_tokens[i]);
    nll += r.window_nll[i];
    tokens += r.window_tokens[i];
  }
  if (tokens != r.tokens) return fmt::format("windows hold {} tokens, not {}", tokens, r.tokens);
  if (std::abs(nll - r.nll) > 1e-9 * std::max(1.0, r.nll))
    return fmt::format("windows add up to NLL {}, not nll_sum {}", nll, r.nll);
  if (r.position_nll.size() != r.position_start.size() ||
      r.position_nll.size() != r.position_count.size())
    return "position_nll, position_start and position_count differ in length";
  if (!r.position_nll.empty()) {
    double by_position = 0;
    int64_t counted = 0;
    for (size_t b = 0; b < r.position_nll.size(); ++b) {
      by_position += r.position_nll[b] * static_cast<double>(r.position_count[b]);
      counted += r.position_count[b];
    }
    if (counted != r.tokens || !(std::abs(by_position - r.nll) <= 1e-6 * std::max(1.0, r.nll)))
      return "the position buckets do not add up to the windows";
  }
  return "";
}

}  // namespace

uint64_t checksum_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  Fnv1a64 h;
  std::vector<char> buf(1 << 16);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    h.add(buf.data(), static_cast<size_t>(in.gcount()));
  }
  return h.value();
}

uint64_t checksum_ids(const std::vector<int32_t>& ids) {
  Fnv1a64 h;
  for (const int32_t id : ids) {
    const uint32_t u = static_cast<uint32_t>(id);
    const unsigned char b[4] = {static_cast<unsigned char>(u), static_cast<unsigned char>(u >> 8),
                                static_cast<unsigned char>(u >> 16),
                                static_cast<unsigned char>(u >> 24)};
    h.add(b, 4);
  }
  return h.value();
}

EvalSubject identify_subject(const LoadedRun& run, const std::string& which,
                             const std::string& split, const std::vector<int32_t>& ids) {
  const std::string ckpt = checkpoint_file(run.paths, which);
  EvalSubject s;
  s.split = split;
  s.split_checksum = checksum_ids(ids);
  s.checkpoint = std::filesystem::path(ckpt).filename().string();
  s.checkpoint_step = run.state.step;
  s.checkpoint_checksum = checksum_file(ckpt);
  return s;
}

nlohmann::json subject_to_json(const EvalSubject& s) {
  return {{"split", s.split},
          {"split_checksum", hex64(s.split_checksum)},
          {"checkpoint", s.checkpoint},
          {"checkpoint_step", s.checkpoint_step},
          {"checkpoint_checksum", hex64(s.checkpoint_checksum)}};
}

nlohmann::json eval_cache_key(const EvalSubject& s, const ModelConfig& model,
                              const EvalRequest& r) {
  nlohmann::json key = subject_to_json(s);
  key.update({{"version", kCacheVersion},
              {"method", r.protocol},
              {"length", r.length},
              {"clamp_len", r.clamp_len >= 0 ? r.clamp_len : model.clamp_len},
              {"max_tokens", r.max_tokens},
              {"precision", to_string(r.precision)},
              {"position_buckets", r.position_buckets},
              {"aid", to_string(r.aid)},
              {"aid_factor", r.aid_factor},
              {"train_len", r.aid == ExtrapolationAid::kNone ? 0 : r.train_len}});
  add_settings_to_key(eval_protocol(r.protocol), resolved_settings(r), key);
  return key;
}

std::string eval_cache_path(const std::string& run_dir, const nlohmann::json& k) {
  std::string name = fmt::format("{}-{}-L{}", k.at("split").get<std::string>(),
                                 k.at("method").get<std::string>(), k.at("length").get<int64_t>());
  name += settings_file_part(eval_protocol(k.at("method").get<std::string>()), k);
  name += fmt::format("-C{}-T{}-{}-P{}-{}-step{}.json", k.at("clamp_len").get<int64_t>(),
                      k.at("max_tokens").get<int64_t>(), k.at("precision").get<std::string>(),
                      k.at("position_buckets").get<int64_t>(),
                      std::filesystem::path(k.at("checkpoint").get<std::string>()).stem().string(),
                      k.at("checkpoint_step").get<int64_t>());
  if (k.at("aid") != "none") {
    name.insert(name.size() - 5, fmt::format("-A{}-F{:g}", k.at("aid").get<std::string>(),
                                             k.at("aid_factor").get<double>()));
  }
  return RunPaths{run_dir}.eval_cache() + "/" + name;
}

nlohmann::json result_to_json(const EvalResult& r) {
  return {{"method", r.protocol},
          {"length", r.length},
          {"settings", settings_to_json(eval_protocol(r.protocol), r.settings)},
          {"aid", to_string(r.aid)},
          {"aid_factor", r.aid_factor},
          {"tokens", r.tokens},
          {"nll_sum", r.nll},
          {"window_nll", r.window_nll},
          {"window_tokens", r.window_tokens},
          {"position_nll", r.position_nll},
          {"position_start", r.position_start},
          {"position_count", r.position_count}};
}

EvalResult result_from_json(const nlohmann::json& j) {
  EvalResult r;
  r.protocol = parse_protocol_name(j.at("method").get<std::string>());
  r.length = j.at("length").get<int64_t>();
  r.settings = settings_from_json(eval_protocol(r.protocol), j.at("settings"));
  r.aid = parse_extrapolation_aid(j.at("aid").get<std::string>(), "aid");
  r.aid_factor = j.at("aid_factor").get<double>();
  r.tokens = j.at("tokens").get<int64_t>();
  r.nll = j.at("nll_sum").get<double>();
  r.window_nll = j.at("window_nll").get<std::vector<double>>();
  r.window_tokens = j.at("window_tokens").get<std::vector<int64_t>>();
  r.position_nll = j.at("position_nll").get<std::vector<double>>();
  r.position_start = j.at("position_start").get<std::vector<int64_t>>();
  r.position_count = j.at("position_count").get<std::vector<int64_t>>();
  const std::string problem = inconsistency(r);
  if (!problem.empty()) throw std::runtime_error("inconsistent evaluation result: " + problem);
  return r;
}

std::optional<EvalResult> read_eval_cache(const std::string& path, const nlohmann::json& key,
                                          std::string* damage) {
  if (!is_regular_file(path)) return std::nullopt;
  const auto damaged = [&](const std::string& why) -> std::optional<EvalResult> {
    if (damage) *damage = why;
    return std::nullopt;
  };
  nlohmann::json j;
  try {
    std::ifstream in(path);
    j = nlohmann::json::parse(in);
  } catch (const std::exception&) {
    return damaged("not valid JSON (truncated or damaged)");
  }
  if (!j.is_object() || !j.contains("key") || !j.contains("result"))
    return damaged("not an evaluation cache entry");
  if (j.at("key") != key) return std::nullopt;  // another checkpoint or split: not damage
  if (!digest_matches(j)) return damaged("its digest does not match its content (edited?)");
  try {
    return result_from_json(j.at("result"));
  } catch (const std::exception& e) {
    return damaged(e.what());
  }
}

std::string write_eval_cache(const std::string& path, const nlohmann::json& key,
                             const EvalResult& result) {
  try {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    if (ec)
      return "cannot create " + std::filesystem::path(path).parent_path().string() + ": " +
             ec.message();
    const nlohmann::json entry = {{"key", key}, {"result", result_to_json(result)}};
    write_file_atomic(path, with_digest(entry).dump() + "\n");
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

CachedEvaluator::CachedEvaluator(LoadedRun& run, const std::string& which, const std::string& split,
                                 const std::vector<int32_t>& ids, bool read_cache)
    : run_(run),
      ids_(ids),
      subject_(identify_subject(run, which, split, ids)),
      read_cache_(read_cache) {}

EvalResult CachedEvaluator::evaluate(const EvalRequest& request, bool* was_cached,
                                     const EvalProgressFn& progress) {
  if (was_cached) *was_cached = false;
  const auto key = eval_cache_key(subject_, run_.config.model, request);
  const auto path = eval_cache_path(run_.paths.dir, key);
  std::string damage;
  if (auto cached = read_cache_ ? read_eval_cache(path, key, &damage) : std::nullopt) {
    if (was_cached) *was_cached = true;
    return *cached;
  }
  if (!damage.empty())
    fmt::print(stderr, "warning: {}: {}; evaluating again (the entry is replaced)\n", path, damage);
  auto result = txl::evaluate(run_.model, ids_, request, progress);
  const auto problem = write_eval_cache(path, key, result);
  if (!problem.empty()) fmt::print(stderr, "warning: evaluation result not cached: {}\n", problem);
  return result;
}

}  // namespace txl
