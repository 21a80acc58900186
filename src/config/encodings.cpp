// The traits table. Each entry says what one encoding is and costs; its numbers mirror the
// modules in src/model/encodings/ (the memory-estimate and bench tests compare them with
// the built model's parameter count).
#include "txl/config/encodings.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "txl/util/text.h"

namespace txl {

namespace {

double none(const ModelConfig& /*c*/) { return 0.0; }

PositionCost no_cost(const ModelConfig& /*c*/, double /*b*/, double /*q*/, double /*k*/) {
  return {};
}

double hd(const ModelConfig& c) { return static_cast<double>(c.n_head * c.d_head); }

EncodingTraits relative() {
  EncodingTraits t{};
  t.id = PosEncoding::kRelative;
  t.name = "relative";
  t.formula = "(q+u).k + (q+v).W_r R[i-j]: Transformer-XL sinusoids R, projected per layer";
  t.takes_memory = true;
  t.uses_clamp_len = true;
  t.layer_parameters = [](const ModelConfig& c) {
    return 2 * hd(c) + static_cast<double>(c.d_model) * hd(c);  // u, v and W_r
  };
  t.model_parameters = none;
  t.cost = [](const ModelConfig& c, double b, double q, double k) {
    // (q + v).r_k against one key per distance; W_r R once per pass, R a constant.
    return PositionCost{hd(c) * k, k * static_cast<double>(c.d_model) * hd(c) / (b * q), 4.0};
  };
  return t;
}

EncodingTraits absolute() {
  EncodingTraits t{};
  t.id = PosEncoding::kAbsolute;
  t.name = "absolute";
  t.formula = "q.k; sinusoids PE(t) added to the token embeddings (Vaswani et al.)";
  t.layer_parameters = none;
  t.model_parameters = none;
  t.cost = no_cost;
  return t;
}

EncodingTraits relative_learned() {
  EncodingTraits t{};
  t.id = PosEncoding::kRelativeLearned;
  t.name = "relative_learned";
  t.formula = "(q+u).k + (q+v).P_h T[clamp(i-j)]: a learned table of distances (the seed)";
  t.takes_memory = true;
  t.uses_clamp_len = true;
  t.uses_max_rel_dist = true;
  t.layer_parameters = [](const ModelConfig& c) {
    const double D = static_cast<double>(c.d_head), H = static_cast<double>(c.n_head);
    // u, v, the distance table and one D x D projection per head.
    return 2 * hd(c) + (2 * static_cast<double>(c.max_rel_dist) - 1) * D + H * D * D;
  };
  t.model_parameters = none;
  t.cost = [](const ModelConfig& c, double b, double q, double k) {
    const double D = static_cast<double>(c.d_head);
    return PositionCost{hd(c) * k, hd(c) * k * D / (b * q), 6.0};  // the table is learned
  };
  return t;
}

}  // namespace

const std::vector<EncodingTraits>& encoding_registry() {
  static const std::vector<EncodingTraits> registry = {
      relative(),
      absolute(),
      relative_learned(),
  };
  return registry;
}

const EncodingTraits& encoding_traits(PosEncoding encoding) {
  for (const auto& t : encoding_registry()) {
    if (t.id == encoding) return t;
  }
  throw std::logic_error("position encoding " + std::to_string(static_cast<int>(encoding)) +
                         " has no traits entry");
}

std::vector<std::string> encoding_names() {
  std::vector<std::string> names;
  for (const auto& t : encoding_registry()) names.emplace_back(t.name);
  return names;
}

const EncodingOption* find_encoding_option(const EncodingTraits& traits, const std::string& key) {
  for (const auto& option : traits.options) {
    if (key == option.key) return &option;
  }
  return nullptr;
}

const EncodingTraits* encoding_with_option(const std::string& key) {
  for (const auto& t : encoding_registry()) {
    if (find_encoding_option(t, key)) return &t;
  }
  return nullptr;
}

double encoding_option(const ModelConfig& c, const std::string& key) {
  const EncodingTraits& traits = encoding_traits(c.pos_encoding);
  const EncodingOption* option = find_encoding_option(traits, key);
  if (!option) {
    throw std::logic_error("model." + key + " is not an option of pos_encoding " + traits.name);
  }
  const auto found = c.encoding_options.find(key);
  return found == c.encoding_options.end() ? option->default_value : found->second;
}

int64_t encoding_option_int(const ModelConfig& c, const std::string& key) {
  return static_cast<int64_t>(std::llround(encoding_option(c, key)));
}

int64_t position_limit(const ModelConfig& c) {
  const EncodingTraits& traits = encoding_traits(c.pos_encoding);
  if (!traits.length_limit_key) return std::numeric_limits<int64_t>::max();
  return encoding_option_int(c, traits.length_limit_key);
}

}  // namespace txl
