// The traits table. Each entry says what one encoding is and costs; its numbers mirror the
// modules in src/model/encodings/ (the memory-estimate and bench tests compare them with
// the built model's parameter count).
#include "txl/config/encodings.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <utility>

#include "txl/util/error.h"
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

EncodingTraits nope() {
  EncodingTraits t{};
  t.id = PosEncoding::kNope;
  t.name = "nope";
  t.formula = "q.k: no position information beyond the causal mask (Kazemnejad et al.)";
  t.takes_memory = true;
  t.layer_parameters = none;
  t.model_parameters = none;
  t.cost = no_cost;
  return t;
}

EncodingTraits rope() {
  EncodingTraits t{};
  t.id = PosEncoding::kRope;
  t.name = "rope";
  t.formula = "R(p_i) q . R(p_j) k: pairs (x_j, x_j+D/2) rotated by p * base^(-2j/D) (RoFormer)";
  t.takes_memory = true;
  t.options = {{"rope_base", 10000.0, 2.0, 1e12, false, "rope: base b of theta_j = b^(-2j/D)"}};
  t.aids = {ExtrapolationAid::kPi, ExtrapolationAid::kNtk, ExtrapolationAid::kYarn,
            ExtrapolationAid::kDynamicNtk, ExtrapolationAid::kDynamicYarn};
  t.layer_parameters = none;
  t.model_parameters = none;
  t.cost = no_cost;  // element-wise rotations of q and k, no multiply-accumulates
  return t;
}

EncodingTraits alibi() {
  EncodingTraits t{};
  t.id = PosEncoding::kAlibi;
  t.name = "alibi";
  t.formula = "q.k - m_h (i-j): fixed geometric slopes m_h, no embedding (Press et al.)";
  t.takes_memory = true;
  t.uses_clamp_len = true;
  t.layer_parameters = none;
  t.model_parameters = none;
  t.cost = no_cost;
  return t;
}

EncodingTraits t5() {
  EncodingTraits t{};
  t.id = PosEncoding::kT5;
  t.name = "t5";
  t.formula = "q.k + sqrt(D) T[bucket(i-j), h]: learned per layer, log-spaced buckets (T5)";
  t.takes_memory = true;
  t.options = {{"t5_buckets", 32, 2, 4096, true, "t5: number of distance buckets", /*shapes=*/true},
               {"t5_max_distance", 128, 2, 1e9, true, "t5: distance where the last bucket starts"}};
  t.layer_parameters = [](const ModelConfig& c) {
    return encoding_option(c, "t5_buckets") * static_cast<double>(c.n_head);
  };
  // bucket(n) (model/encodings/t5.h) divides by ln(t5_max_distance / E), E = t5_buckets / 2
  // exact buckets: at or below E it divides by 0 or a negative number and indexes outside
  // the table.
  t.check = [](const ModelConfig& c, const TrainConfig& /*t*/) -> std::string {
    const int64_t buckets = encoding_option_int(c, "t5_buckets");
    const int64_t max_distance = encoding_option_int(c, "t5_max_distance");
    const int64_t exact = buckets / 2;
    if (max_distance > exact) return "";
    return "model.t5_max_distance (" + std::to_string(max_distance) +
           ") must be greater than model.t5_buckets / 2 (" + std::to_string(buckets) +
           " / 2 = " + std::to_string(exact) + "): the first " + std::to_string(exact) +
           " buckets hold the distances below " + std::to_string(exact) +
           " exactly, the others are log-spaced from there up to t5_max_distance; raise "
           "model.t5_max_distance to at least " +
           std::to_string(exact + 1) + " or lower model.t5_buckets";
  };
  t.model_parameters = none;
  t.cost = no_cost;  // a gather
  return t;
}

EncodingTraits kerple() {
  EncodingTraits t{};
  t.id = PosEncoding::kKerple;
  t.name = "kerple";
  t.formula = "q.k - r1_h log(1 + r2_h (i-j)): r1, r2 > 0 learned per head (KERPLE, log)";
  t.takes_memory = true;
  t.uses_clamp_len = true;
  t.layer_parameters = [](const ModelConfig& c) { return 2.0 * static_cast<double>(c.n_head); };
  t.model_parameters = none;
  t.cost = no_cost;
  return t;
}

EncodingTraits fire() {
  EncodingTraits t{};
  t.id = PosEncoding::kFire;
  t.name = "fire";
  t.formula = "q.k + MLP(psi(i-j) / psi(max(L, i)))_h, psi(x) = log(cx+1), c, L learned (FIRE)";
  t.takes_memory = true;
  t.options = {{"fire_threshold", 512, 1, 1e9, false, "fire: initial value of the threshold L"}};
  t.layer_parameters = [](const ModelConfig& c) {
    const double hidden = 32, H = static_cast<double>(c.n_head);
    return 2 * hidden + hidden * H + H + 2;  // 1 -> 32 -> H MLP with biases, c, L
  };
  t.model_parameters = none;
  t.cost = [](const ModelConfig& c, double b, double /*q*/, double k) {
    const double hidden = 32, H = static_cast<double>(c.n_head);
    // The MLP runs once per (query, key) pair per pass, shared by the batch.
    return PositionCost{0.0, k * (hidden + hidden * H) / b, 6.0};
  };
  return t;
}

EncodingTraits learned_absolute() {
  EncodingTraits t{};
  t.id = PosEncoding::kLearnedAbsolute;
  t.name = "learned_absolute";
  t.formula = "q.k; a learned table P[t] of max_len positions added to the embeddings (GPT-2)";
  t.length_limit_key = "max_len";
  t.options = {{"max_len", 1024, 1, 1 << 24, true, "learned_absolute: positions in the table",
                /*shapes=*/true}};
  t.aids = {ExtrapolationAid::kInterpolate};
  t.layer_parameters = none;
  t.model_parameters = [](const ModelConfig& c) {
    return encoding_option(c, "max_len") * static_cast<double>(c.d_model);
  };
  // A training segment reads a row per position, with no memory before it.
  t.check = [](const ModelConfig& c, const TrainConfig& t) -> std::string {
    const int64_t rows = encoding_option_int(c, "max_len");
    const bool drawn = t.tgt_len_max > t.tgt_len;
    const int64_t longest = drawn ? t.tgt_len_max : t.tgt_len;
    if (rows >= longest) return "";
    const std::string key = drawn ? "train.tgt_len_max" : "train.tgt_len";
    return "model.max_len (" + std::to_string(rows) + ") must be at least " + key + " (" +
           std::to_string(longest) + "): the learned table of pos_encoding learned_absolute " +
           "has one row per position of a training segment; raise model.max_len or lower " + key;
  };
  t.cost = no_cost;
  return t;
}

}  // namespace

const std::vector<EncodingTraits>& encoding_registry() {
  static const std::vector<EncodingTraits> registry = {
      relative(), absolute(), relative_learned(), nope(), rope(),
      alibi(),    t5(),       kerple(),           fire(), learned_absolute(),
  };
  return registry;
}

namespace {

const std::vector<std::pair<ExtrapolationAid, const char*>>& aid_names() {
  static const std::vector<std::pair<ExtrapolationAid, const char*>> names = {
      {ExtrapolationAid::kNone, "none"},
      {ExtrapolationAid::kPi, "pi"},
      {ExtrapolationAid::kNtk, "ntk"},
      {ExtrapolationAid::kYarn, "yarn"},
      {ExtrapolationAid::kDynamicNtk, "dynamic_ntk"},
      {ExtrapolationAid::kDynamicYarn, "dynamic_yarn"},
      {ExtrapolationAid::kInterpolate, "interpolate"},
  };
  return names;
}

}  // namespace

std::string to_string(ExtrapolationAid aid) {
  for (const auto& [value, name] : aid_names()) {
    if (value == aid) return name;
  }
  return "<invalid aid>";
}

std::vector<std::string> extrapolation_aid_names() {
  std::vector<std::string> out;
  for (const auto& [value, name] : aid_names()) out.emplace_back(name);
  return out;
}

ExtrapolationAid parse_extrapolation_aid(const std::string& name, const std::string& key_path) {
  for (const auto& [value, candidate] : aid_names()) {
    if (name == candidate) return value;
  }
  throw InputError(key_path + ": \"" + name + "\" is not valid; expected one of " +
                   join(extrapolation_aid_names()));
}

bool is_dynamic(ExtrapolationAid aid) {
  return aid == ExtrapolationAid::kDynamicNtk || aid == ExtrapolationAid::kDynamicYarn;
}

std::optional<double> parse_aid_factor(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (*end != '\0' || !(value >= 1) || !std::isfinite(value)) return std::nullopt;
  return value;
}

double aid_scale(ExtrapolationAid aid, double factor, int64_t length, int64_t key_len,
                 int64_t train_len) {
  if (aid == ExtrapolationAid::kNone) return 1.0;
  if (factor > 0) return factor;
  if (train_len < 1) return 1.0;
  if (aid == ExtrapolationAid::kInterpolate) {
    // Positions 0..length-1 onto the table's rows 0..train_len-1.
    if (train_len < 2) return 1.0;
    return std::max(1.0, static_cast<double>(length - 1) / static_cast<double>(train_len - 1));
  }
  const int64_t l = is_dynamic(aid) ? key_len : length;
  return std::max(1.0, static_cast<double>(l) / static_cast<double>(train_len));
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

std::vector<std::string> encoding_names_where(bool EncodingTraits::*flag) {
  std::vector<std::string> names;
  for (const auto& t : encoding_registry()) {
    if (t.*flag) names.emplace_back(t.name);
  }
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
