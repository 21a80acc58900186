#include "txl/util/env.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <stdexcept>

#include "txl/util/env_variables.h"
#include "txl/util/error.h"
#include "txl/util/parse.h"

namespace txl {

namespace {

const char* kind_name(EnvKind kind) {
  switch (kind) {
    case EnvKind::kSwitch:
      return "a switch";
    case EnvKind::kInteger:
      return "an integer";
    case EnvKind::kNumber:
      return "a number";
    case EnvKind::kSteps:
      return "a list of steps";
    case EnvKind::kFlags:
      return "a flag list";
    case EnvKind::kText:
      break;
  }
  return "text";
}

// The entry of `name`, which must be of one of `kinds` (the reader's).
const EnvVariable& entry(const char* name, std::initializer_list<EnvKind> kinds,
                         const char* reader) {
  const EnvVariable& v = env_variable(name);
  for (EnvKind kind : kinds)
    if (v.kind == kind) return v;
  throw std::logic_error(std::string(name) + " is declared as " + kind_name(v.kind) +
                         " (util/env_variables.cpp), not read with " + reader);
}

// The value of `v`, or nullptr when unset (or empty, unless its entry says empty is set).
const char* lookup(const EnvVariable& v) {
  const char* text = std::getenv(v.name);
  if (text == nullptr || (*text == '\0' && !v.empty_is_set)) return nullptr;
  return text;
}

[[noreturn]] void refuse(const EnvVariable& v, const char* text, const std::string& expected) {
  throw InputError(std::string(v.name) + "=\"" + text + "\" is not valid; expected " + expected +
                   " (" + v.does + ")");
}

}  // namespace

bool env_set(const char* name) { return lookup(env_variable(name)) != nullptr; }

bool env_is(const char* name, const char* value) {
  const char* text = lookup(entry(name, {EnvKind::kSwitch}, "env_is"));
  return text != nullptr && std::strcmp(text, value) == 0;
}

std::optional<int64_t> env_int(const char* name) {
  const EnvVariable& v = entry(name, {EnvKind::kInteger}, "env_int");
  return env_int(name, v.lo, v.hi);
}

std::optional<int64_t> env_int(const char* name, int64_t lo, int64_t hi) {
  const EnvVariable& v = entry(name, {EnvKind::kInteger}, "env_int");
  if (lo < v.lo || hi > v.hi) {
    throw std::logic_error(std::string(name) + " read from " + std::to_string(lo) + " to " +
                           std::to_string(hi) + ", outside its declared range");
  }
  const char* text = lookup(v);
  if (text == nullptr) return std::nullopt;
  int64_t value = 0;
  const char* end = text + std::strlen(text);
  const auto [ptr, ec] = std::from_chars(text, end, value);
  if (ec != std::errc() || ptr != end || value < lo || value > hi) {
    refuse(v, text, "an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
  }
  return value;
}

std::optional<double> env_number(const char* name) {
  const EnvVariable& v = entry(name, {EnvKind::kNumber}, "env_number");
  const char* text = lookup(v);
  if (text == nullptr) return std::nullopt;
  // As strictly as env_int reads an integer: digits and a point only (no space, sign, hex,
  // exponent, inf or nan, which strtod takes), a finite value above 0.
  double value = 0;
  const char* end = text + std::strlen(text);
  const auto [ptr, ec] = std::from_chars(text, end, value, std::chars_format::fixed);
  if (ec != std::errc() || ptr != end || !std::isfinite(value) || !(value > 0)) {
    refuse(v, text, "a number above 0");
  }
  return value;
}

std::vector<int64_t> env_steps(const char* name) {
  const EnvVariable& v = entry(name, {EnvKind::kSteps}, "env_steps");
  std::vector<int64_t> steps;
  const char* text = lookup(v);
  if (text == nullptr) return steps;
  if (parse_positive_integers(text, steps)) {
    refuse(v, text, "step numbers >= 1 separated by commas");
  }
  return steps;
}

std::optional<std::string> env_text(const char* name) {
  const char* text = lookup(entry(name, {EnvKind::kText, EnvKind::kFlags}, "env_text"));
  if (text == nullptr) return std::nullopt;
  return std::string(text);
}

}  // namespace txl
