// Whether a request is evaluated: the one decision eval, compare, study, the probes' windows
// and bench ask (protocol.h: request_unavailable, window_past_table; evaluate.h:
// check_eval_request).
#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "txl/config/encodings.h"
#include "txl/eval/evaluate.h"
#include "txl/eval/protocol.h"
#include "txl/util/error.h"
#include "txl/util/text.h"

namespace txl {

namespace {

// n/a: the protocol needs memory the encoding does not carry.
std::string protocol_not_applicable(const ModelConfig& model, const std::string& protocol) {
  const std::string why = protocol_inapplicable(model, protocol);
  if (why.empty()) return "";
  return "--method " + protocol + " does not apply: model.pos_encoding " + why +
         " (use nonoverlap or sliding)";
}

// n/a: an aid the encoding does not have.
std::string aid_not_applicable(const ModelConfig& model, ExtrapolationAid aid) {
  const EncodingTraits& traits = encoding_traits(model.pos_encoding);
  if (aid == ExtrapolationAid::kNone ||
      std::find(traits.aids.begin(), traits.aids.end(), aid) != traits.aids.end())
    return "";
  std::vector<std::string> names;
  for (const auto a : traits.aids) names.push_back(to_string(a));
  return "--aid " + to_string(aid) + " does not apply to model.pos_encoding " + traits.name +
         " (its aids: " + (names.empty() ? "none" : join(names)) + ")";
}

// n/a: a length a learned table cannot encode, with the aid and factor asked for.
std::string length_not_applicable(const ModelConfig& model, const EvalRequest& r) {
  if (r.aid != ExtrapolationAid::kInterpolate) {
    const std::string past = window_past_table(model, r.length);
    return past.empty() ? "" : past + ", which --aid interpolate stretches";
  }
  const int64_t limit = position_limit(model);
  if (r.aid_factor > 0 &&
      static_cast<double>(r.length - 1) / r.aid_factor > static_cast<double>(limit - 1)) {
    return "--aid-factor " + fmt::format("{:g}", r.aid_factor) + " maps length " +
           std::to_string(r.length) + " past the " + std::to_string(limit) +
           " positions of the table; use at least " +
           fmt::format("{:g}", static_cast<double>(r.length - 1) / (limit - 1)) + " or 0 (derived)";
  }
  return "";
}

// Refusals: settings the user must change, whatever the run.
void check_request_options(const ModelConfig& model, const EvalRequest& r) {
  // The same rule check_eval_options applies to --aid-factor, for requests built in code.
  if (!(r.aid_factor == 0 || r.aid_factor >= 1) || !std::isfinite(r.aid_factor)) {
    throw InputError("--aid-factor must be >= 1 (or 0 = derived), got " +
                     fmt::format("{}", r.aid_factor));
  }
  if (r.shards < 1 || r.shard < 0 || r.shard >= r.shards) {
    throw std::invalid_argument("evaluation shard " + std::to_string(r.shard) + " of " +
                                std::to_string(r.shards) + " does not exist");
  }
  if (r.clamp_len < -1) {
    throw InputError("--clamp-len must be >= 0 (0 = no cap), got " + std::to_string(r.clamp_len));
  }
  const EncodingTraits& traits = encoding_traits(model.pos_encoding);
  if (r.clamp_len >= 0 && !traits.uses_clamp_len) {
    throw InputError("--clamp-len " + std::to_string(r.clamp_len) + " caps the distances of " +
                     join(encoding_names_where(&EncodingTraits::uses_clamp_len)) +
                     ", but the run's model.pos_encoding is " + traits.name +
                     ", which ignores it; leave --clamp-len out");
  }
}

}  // namespace

std::string window_past_table(const ModelConfig& model, int64_t window) {
  const int64_t limit = position_limit(model);
  if (window <= limit) return "";
  return fmt::format("past the {} positions of {} (model.{})", limit, to_string(model.pos_encoding),
                     encoding_traits(model.pos_encoding).length_limit_key);
}

std::string request_unavailable(const ModelConfig& model, const EvalRequest& r) {
  if (r.length < 1)
    throw InputError("evaluation length must be a positive integer, got " +
                     std::to_string(r.length));
  std::string why = protocol_not_applicable(model, r.protocol);
  if (!why.empty()) return why;
  check_request_settings(r, flag_namer(eval_protocol(r.protocol)), /*accept_unset=*/false);
  check_request_options(model, r);
  why = aid_not_applicable(model, r.aid);
  if (!why.empty()) return why;
  return length_not_applicable(model, r);
}

std::string skipped_reasons(const std::vector<int64_t>& lengths,
                            const std::vector<std::string>& skipped) {
  std::vector<std::pair<std::string, std::vector<std::string>>> groups;
  for (size_t i = 0; i < skipped.size() && i < lengths.size(); ++i) {
    if (skipped[i].empty()) continue;
    auto group = std::find_if(groups.begin(), groups.end(),
                              [&](const auto& g) { return g.first == skipped[i]; });
    if (group == groups.end()) group = groups.insert(groups.end(), {skipped[i], {}});
    group->second.push_back(std::to_string(lengths[i]));
  }
  std::vector<std::string> parts;
  for (const auto& [why, at] : groups) {
    parts.push_back(why + " (length" + (at.size() > 1 ? "s " : " ") + join(at) + ")");
  }
  return join(parts, "; ");
}

void check_eval_request(const TransformerLM& model, const EvalRequest& request) {
  const std::string why = request_unavailable(model->config(), request);
  if (!why.empty())
    throw InputError("length " + std::to_string(request.length) + " cannot be evaluated: " + why);
}

}  // namespace txl
