#include "txl/eval/cache.h"

#include <spdlog/fmt/fmt.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "txl/eval/protocol.h"
#include "txl/util/fs.h"
#include "txl/util/hash.h"

namespace txl {

namespace {

constexpr int kCacheVersion = 2;  // 2: learned_absolute interpolation over the trained rows

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

nlohmann::json eval_cache_key(const EvalSubject& s, const ModelConfig& model,
                              const EvalRequest& r) {
  nlohmann::json key = {{"version", kCacheVersion},
                        {"split", s.split},
                        {"split_checksum", hex64(s.split_checksum)},
                        {"checkpoint", s.checkpoint},
                        {"checkpoint_step", s.checkpoint_step},
                        {"checkpoint_checksum", hex64(s.checkpoint_checksum)},
                        {"method", to_string(r.method)},
                        {"length", r.length},
                        {"clamp_len", r.clamp_len >= 0 ? r.clamp_len : model.clamp_len},
                        {"max_tokens", r.max_tokens},
                        {"precision", to_string(r.precision)},
                        {"position_buckets", r.position_buckets},
                        {"aid", to_string(r.aid)},
                        {"aid_factor", r.aid_factor},
                        {"train_len", r.aid == ExtrapolationAid::kNone ? 0 : r.train_len}};
  eval_protocol(r.method).cache_key(r, key);  // its settings: stride, mem_len, streams
  return key;
}

std::string eval_cache_path(const std::string& run_dir, const nlohmann::json& k) {
  std::string name = fmt::format("{}-{}-L{}", k.at("split").get<std::string>(),
                                 k.at("method").get<std::string>(), k.at("length").get<int64_t>());
  if (k.at("stride").get<int64_t>() > 0) name += fmt::format("-S{}", k.at("stride").get<int64_t>());
  if (k.at("streams").get<int64_t>() > 0) {  // a protocol with memory streams
    name += fmt::format("-M{}-B{}", k.at("mem_len").get<int64_t>(), k.at("streams").get<int64_t>());
    if (k.value("same_length", false)) name += "-SL";
  }
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
  return {{"method", to_string(r.method)},
          {"length", r.length},
          {"stride", r.stride},
          {"mem_len", r.mem_len},
          {"streams", r.streams},
          {"same_length", r.same_length},
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
  r.method = parse_eval_method(j.at("method").get<std::string>());
  r.length = j.at("length").get<int64_t>();
  r.stride = j.at("stride").get<int64_t>();
  r.mem_len = j.at("mem_len").get<int64_t>();
  r.streams = j.at("streams").get<int64_t>();
  r.same_length = j.value("same_length", false);
  r.aid = parse_extrapolation_aid(j.at("aid").get<std::string>(), "aid");
  r.aid_factor = j.at("aid_factor").get<double>();
  r.tokens = j.at("tokens").get<int64_t>();
  r.nll = j.at("nll_sum").get<double>();
  r.window_nll = j.at("window_nll").get<std::vector<double>>();
  r.window_tokens = j.at("window_tokens").get<std::vector<int64_t>>();
  r.position_nll = j.at("position_nll").get<std::vector<double>>();
  r.position_start = j.at("position_start").get<std::vector<int64_t>>();
  r.position_count = j.at("position_count").get<std::vector<int64_t>>();
  int64_t tokens = 0;
  for (const auto t : r.window_tokens) tokens += t;
  if (r.window_nll.size() != r.window_tokens.size() || tokens != r.tokens ||
      r.position_nll.size() != r.position_start.size() ||
      r.position_nll.size() != r.position_count.size()) {
    throw std::runtime_error("inconsistent cached evaluation result");
  }
  return r;
}

std::optional<EvalResult> read_eval_cache(const std::string& path, const nlohmann::json& key) {
  if (!is_regular_file(path)) return std::nullopt;
  try {
    std::ifstream in(path);
    const auto j = nlohmann::json::parse(in);
    if (j.at("key") != key) return std::nullopt;
    return result_from_json(j.at("result"));
  } catch (const std::exception&) {
    return std::nullopt;  // a damaged cache file is simply recomputed and overwritten
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
    write_file_atomic(
        path, nlohmann::json{{"key", key}, {"result", result_to_json(result)}}.dump() + "\n");
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

CachedEvaluator::CachedEvaluator(LoadedRun& run, const std::string& which, const std::string& split,
                                 const std::vector<int32_t>& ids, bool read_cache)
    : run_(run), ids_(ids), read_cache_(read_cache) {
  const std::string ckpt = checkpoint_file(run.paths, which);
  subject_.split = split;
  subject_.split_checksum = checksum_ids(ids);
  subject_.checkpoint = std::filesystem::path(ckpt).filename().string();
  subject_.checkpoint_step = run.state.step;
  subject_.checkpoint_checksum = checksum_file(ckpt);
}

EvalResult CachedEvaluator::evaluate(const EvalRequest& request, bool* was_cached,
                                     const EvalProgressFn& progress) {
  if (was_cached) *was_cached = false;
  const auto key = eval_cache_key(subject_, run_.config.model, request);
  const auto path = eval_cache_path(run_.paths.dir, key);
  if (auto cached = read_cache_ ? read_eval_cache(path, key) : std::nullopt) {
    if (was_cached) *was_cached = true;
    return *cached;
  }
  auto result = txl::evaluate(run_.model, ids_, request, progress);
  const auto problem = write_eval_cache(path, key, result);
  if (!problem.empty()) fmt::print(stderr, "warning: evaluation result not cached: {}\n", problem);
  return result;
}

}  // namespace txl
