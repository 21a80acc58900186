// The values of an evaluation protocol's own settings (sliding's stride; memory's mem_len,
// streams and same_length), held by the name the protocol declares each one under
// (protocol.h, ProtocolSetting) instead of as fields of every struct a request passes
// through. A switch holds 0 or 1. A setting that is absent, or holds the value its
// declaration calls unset, takes the protocol's default (resolved_settings, protocol.h).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>

namespace txl {

class ProtocolSettings {
 public:
  ProtocolSettings() = default;
  ProtocolSettings(std::initializer_list<std::pair<const std::string, int64_t>> values)
      : values_(values) {}

  bool has(const std::string& name) const { return values_.count(name) > 0; }
  // The value of `name`; std::logic_error when it is absent (a protocol reading a setting it
  // did not resolve).
  int64_t get(const std::string& name) const {
    const auto it = values_.find(name);
    if (it == values_.end()) throw std::logic_error("evaluation setting " + name + " is not set");
    return it->second;
  }
  int64_t value_or(const std::string& name, int64_t fallback) const {
    const auto it = values_.find(name);
    return it == values_.end() ? fallback : it->second;
  }
  void set(const std::string& name, int64_t value) { values_[name] = value; }
  const std::map<std::string, int64_t>& values() const { return values_; }
  bool empty() const { return values_.empty(); }
  bool operator==(const ProtocolSettings& other) const { return values_ == other.values_; }
  bool operator!=(const ProtocolSettings& other) const { return values_ != other.values_; }

 private:
  std::map<std::string, int64_t> values_;
};

}  // namespace txl
