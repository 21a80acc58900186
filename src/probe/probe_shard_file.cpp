#include "txl/probe/probe_shard_file.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "txl/util/error.h"
#include "txl/util/json.h"
#include "txl/util/text.h"

namespace txl {

namespace {

constexpr const char* kFormat = "txl probe shard";
constexpr int kVersion = 1;

// The first key (a dotted path under `where`) at which `a` (file `name_a`) and `b` differ, with
// both values; "" when they are equal.
std::string first_difference(const nlohmann::json& a, const nlohmann::json& b,
                             const std::string& where, const std::string& name_a,
                             const std::string& name_b) {
  if (a == b) return "";
  if (a.is_object() && b.is_object()) {
    for (const auto* side : {&a, &b}) {
      for (const auto& [key, value] : side->items()) {
        const auto path = where + "." + key;
        if (!a.contains(key) || !b.contains(key))
          return path + " is in " + (a.contains(key) ? name_a : name_b) + " only";
        const auto d = first_difference(a.at(key), b.at(key), path, name_a, name_b);
        if (!d.empty()) return d;
      }
    }
  }
  return fmt::format("{} is {} in {} but {} in {}", where, shown(b), name_b, shown(a), name_a);
}

ProbePartial partial_from_json(const nlohmann::json& j) {
  ProbePartial p;
  p.name = j.at("name").get<std::string>();
  find_probe(p.name, "probe");
  p.values = probe_values_from_json(j.at("options"));
  p.seconds = j.at("seconds").get<double>();
  p.partial = j.at("partial");
  return p;
}

}  // namespace

nlohmann::json shard_file_json(const ProbeShard& shard, const nlohmann::json& run,
                               const nlohmann::json& settings,
                               const std::vector<ProbePartial>& probes) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& p : probes) {
    list.push_back({{"name", p.name},
                    {"options", to_json(p.values)},
                    {"seconds", p.seconds},
                    {"partial", p.partial}});
  }
  return with_digest({{"format", kFormat},
                      {"version", kVersion},
                      {"shard", shard.index},
                      {"shards", shard.count},
                      {"run", run},
                      {"settings", settings},
                      {"probes", list}});
}

ShardFile read_shard_file(const std::string& path) {
  const nlohmann::json j = read_json_file(path);
  if (!j.is_object() || !j.contains("format") || j.at("format") != kFormat) {
    throw InputError(path +
                     " is not a probe shard file (txl eval --shard K/N --json FILE "
                     "writes one); its \"format\" is not \"" +
                     kFormat + "\"");
  }
  if (!j.contains("version") || j.at("version") != kVersion)
    throw InputError(fmt::format("{}: probe shard file version {}, but this txl reads version {}",
                                 path, shown(j.contains("version") ? j.at("version") : nullptr),
                                 kVersion));
  if (!digest_matches(j))
    throw InputError(path +
                     ": the probe shard file was edited or damaged after it was written "
                     "(its digest does not match); run the shard again");
  ShardFile f;
  f.path = path;
  try {
    f.shard = parse_probe_shard(
        fmt::format("{}/{}", j.at("shard").get<int64_t>(), j.at("shards").get<int64_t>()), "shard");
    f.run = j.at("run");
    f.settings = j.at("settings");
    for (const auto& p : j.at("probes")) f.probes.push_back(partial_from_json(p));
  } catch (const std::exception& e) {  // a missing key or a wrong type: said as the file's
    throw InputError(path + ": not a valid probe shard file: " + e.what());
  }
  return f;
}

namespace {

// The run as the merge compares it: by its checkpoint and split (names, step, checksums),
// not by the directory it was read from, which differs between machines and between
// `--run r` and `--run ./r`.
nlohmann::json run_compared(nlohmann::json run) {
  if (run.is_object()) run.erase("dir");
  return run;
}

// Every file holds the first one's run, settings, N, probes and their options.
void check_same_set(const std::vector<ShardFile>& files) {
  const ShardFile& a = files.front();
  const nlohmann::json a_run = run_compared(a.run);
  for (const auto& b : files) {
    const auto refuse = [&](const std::string& what) {
      throw InputError(fmt::format("--merge: {} and {} are not shards of one probe evaluation: {}",
                                   a.path, b.path, what));
    };
    if (b.shard.count != a.shard.count)
      refuse(fmt::format("{} is shard {} but {} is shard {}", b.path, to_string(b.shard), a.path,
                         to_string(a.shard)));
    const nlohmann::json b_run = run_compared(b.run);
    for (const auto& [key, left, right] : {std::make_tuple("run", &a_run, &b_run),
                                           std::make_tuple("settings", &a.settings, &b.settings)}) {
      const auto d = first_difference(*left, *right, key, a.path, b.path);
      if (!d.empty()) refuse(d);
    }
    std::vector<std::string> names_a, names_b;
    for (const auto& p : a.probes) names_a.push_back(p.name);
    for (const auto& p : b.probes) names_b.push_back(p.name);
    if (names_a != names_b)
      refuse("--probes " + join(names_b, ",") + " in " + b.path + " but " + join(names_a, ",") +
             " in " + a.path);
    for (size_t i = 0; i < a.probes.size(); ++i) {
      const auto d = first_difference(to_json(a.probes[i].values), to_json(b.probes[i].values),
                                      a.probes[i].name, a.path, b.path);
      if (!d.empty()) refuse(d);
    }
  }
}

// The files in shard order, each shard exactly once.
std::vector<const ShardFile*> in_shard_order(const std::vector<ShardFile>& files) {
  const int64_t n = files.front().shard.count;
  std::vector<const ShardFile*> order(static_cast<size_t>(n), nullptr);
  for (const auto& f : files) {
    auto& slot = order[static_cast<size_t>(f.shard.index)];
    if (slot)
      throw InputError(fmt::format("--merge: {} and {} are both shard {}; give each shard once",
                                   slot->path, f.path, to_string(f.shard)));
    slot = &f;
  }
  std::vector<std::string> missing;
  for (int64_t k = 0; k < n; ++k) {
    if (!order[size_t(k)]) missing.push_back(to_string(ProbeShard{k, n}));
  }
  if (!missing.empty())
    throw InputError(fmt::format(
        "--merge: {} of the {} shards missing ({}); run txl eval --shard for {} and merge all {}",
        missing.size(), n, join(missing), missing.size() > 1 ? "them" : "it", n));
  return order;
}

// The files' paths, "a, b, c": a merge's error names the files it read.
std::string join_paths(const std::vector<ShardFile>& files) {
  std::vector<std::string> paths;
  for (const auto& f : files) paths.push_back(f.path);
  return join(paths);
}

// The merged result must be one a probe can give: a value outside its quantity's range means
// the shards' partials did not fit together, however they passed the checks before. No probe
// quantity comes near 10^9 (nats per token, an accuracy, an entropy, a distance or a context
// in tokens, which a probe's kProbeTokenCeiling of forwarded tokens bounds); an accuracy is in
// [0, 1].
void check_merged_range(const ProbeOutput& out, const std::vector<ShardFile>& files) {
  const auto range_of = [](const ProbeMetric& m) {
    if (m.series.find("accuracy") != std::string::npos) return std::make_pair(0.0, 1.0);
    return std::make_pair(-kProbeTokenCeiling, kProbeTokenCeiling);
  };
  for (const auto& m : out.run.metrics) {
    const auto [lo, hi] = range_of(m);
    for (const double v :
         {m.value, m.has_interval ? m.lo : m.value, m.has_interval ? m.hi : m.value}) {
      if (std::isfinite(v) && v >= lo && v <= hi) continue;
      throw InputError(fmt::format(
          "--merge: probe {}'s merged {} at {} = {} is {}, outside [{}, {}]: the shard files ({}) "
          "hold partial results that do not fit together; run the shards again",
          out.name, m.series, m.x_name, shown_number(m.x), shown(v), shown_number(lo),
          shown_number(hi), join_paths(files)));
    }
  }
}

}  // namespace

MergedProbes merge_probe_shards(const std::vector<ShardFile>& files) {
  if (files.empty()) throw InputError("--merge needs the shard files to merge");
  check_same_set(files);
  const auto order = in_shard_order(files);
  MergedProbes merged;
  merged.run = files.front().run;
  merged.settings = files.front().settings;
  for (size_t p = 0; p < files.front().probes.size(); ++p) {
    std::vector<nlohmann::json> partials;
    double seconds = 0;
    for (const auto* f : order) {
      try {  // each file's counts alone first, so that the refusal names the file
        check_partial_pieces(f->probes[p].partial, f->probes[p].name);
      } catch (const InputError& e) {
        throw InputError(f->path + ": " + e.what());
      }
      partials.push_back(f->probes[p].partial);
      seconds += f->probes[p].seconds;
    }
    const auto& first = files.front().probes[p];
    try {
      merged.outputs.push_back(finish_probe(first.name, first.values, partials, seconds));
    } catch (const InputError& e) {  // names the probe; the files are said here
      throw InputError(std::string(e.what()) + " (merging " + join_paths(files) + ")");
    } catch (const nlohmann::json::exception& e) {
      throw InputError("--merge: the shards' partial results of probe " + first.name +
                       " do not fit together: " + e.what() + " (merging " + join_paths(files) +
                       ")");
    }
    check_merged_range(merged.outputs.back(), files);
  }
  return merged;
}

}  // namespace txl
