// The traits registry and the lookups over it. Each encoding's entry, what it is and costs,
// lies beside its module in src/model/encodings/<name>_traits.cpp (its numbers mirror the
// module; the memory-estimate and bench tests compare them with the built model's parameter
// count); the registry calls them in the order of encoding_list.h.
#include "txl/config/encodings.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "txl/config/encoding_traits_helpers.h"
#include "txl/util/error.h"
#include "txl/util/text.h"

namespace txl {

namespace {

// A traits file's id and name must be its line's: a file copied from another encoding and
// left unchanged would otherwise shadow that encoding.
EncodingTraits listed(EncodingTraits traits, PosEncoding id, const char* name) {
  if (traits.id != id || std::string(traits.name) != name) {
    throw std::logic_error(std::string("the traits of encoding_list.h's line ") + name +
                           " name another encoding (" + traits.name + ")");
  }
  return traits;
}

}  // namespace

const std::vector<EncodingTraits>& encoding_registry() {
  // One traits function per line of encoding_list.h, each in its encoding's
  // src/model/encodings/<name>_traits.cpp.
  static const std::vector<EncodingTraits> registry = {
#define TXL_ENCODING(id, name) listed(name##_traits(), PosEncoding::id, #name),
#include "txl/config/encoding_list.h"
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
