// Small helpers shared by the core tests.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "txl/config/config.h"
#include "txl/config/encodings.h"
#include "txl/util/error.h"

namespace txl::testing {

// Expects `call` to throw an InputError whose message contains each of `parts`; a failure
// names the missing part and shows the message, or says nothing was thrown. Returns the
// message ("" when none was thrown), for the checks a caller makes beyond these. Any other
// exception passes through and fails the test.
template <class F>
std::string expect_input_error(F&& call, const std::vector<std::string>& parts = {}) {
  try {
    call();
  } catch (const InputError& e) {
    const std::string what = e.what();
    for (const auto& part : parts) {
      EXPECT_NE(what.find(part), std::string::npos) << "expected \"" << part << "\" in: " << what;
    }
    return what;
  }
  ADD_FAILURE() << "expected an InputError"
                << (parts.empty() ? std::string() : " naming \"" + parts.front() + "\"")
                << ", nothing was thrown";
  return "";
}

// A tiny model configuration for property tests (fast on 2 cores).
inline ModelConfig tiny_model(PosEncoding encoding) {
  ModelConfig c;
  c.pos_encoding = encoding;
  c.n_layer = 2;
  c.d_model = 16;
  c.n_head = 2;
  c.d_head = 8;
  c.d_inner = 32;
  c.dropout = 0.0;
  c.dropatt = 0.0;
  c.max_rel_dist = 6;  // small, so clamping is exercised by the tests' lengths
  c.init_std = 0.2;    // larger than 0.02 so position terms are not negligible
  return c;
}

// tiny_model's adaptive input and softmax for a vocabulary of 11 (the property tests'):
// clusters [0, 4), [4, 8), [8, 11), widths 16, 8, 4, the head's projection untied.
inline ModelConfig with_adaptive(ModelConfig c) {
  c.adaptive = AdaptiveConfig{{4, 8}, 2, {false, true, true}};
  return c;
}

// Every registered encoding, and those that take memory: tests iterate these, so a new
// encoding is tested by every registry-driven test without editing it.
inline std::vector<PosEncoding> all_encodings() {
  std::vector<PosEncoding> out;
  for (const auto& t : encoding_registry()) out.push_back(t.id);
  return out;
}
inline std::vector<PosEncoding> memory_encodings() {
  std::vector<PosEncoding> out;
  for (const auto& t : encoding_registry()) {
    if (t.takes_memory) out.push_back(t.id);
  }
  return out;
}
// gtest parameter names: the encoding's name instead of "4-byte object <02-00 00-00>".
struct EncodingName {
  template <typename Info>
  std::string operator()(const Info& info) const {
    return encoding_traits(info.param).name;
  }
};

// (encoding, adaptive) parameters: the encoding's name, "_adaptive" with model.adaptive.
struct EncodingAdaptiveName {
  template <typename Info>
  std::string operator()(const Info& info) const {
    return std::string(encoding_traits(std::get<0>(info.param)).name) +
           (std::get<1>(info.param) ? "_adaptive" : "");
  }
};

// n token ids in [0, vocab), the same for every call (torch seed 11): a split for probes.
inline std::vector<int32_t> random_ids(int64_t n, int64_t vocab) {
  torch::manual_seed(11);
  const auto t = torch::randint(vocab, {n}, torch::kInt32);
  return {t.data_ptr<int32_t>(), t.data_ptr<int32_t>() + n};
}

inline double max_abs_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>();
}

// Sets (or, with nullptr, unsets) an environment variable for a scope, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) saved_ = old;
    if (value != nullptr) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (saved_) {
      ::setenv(name_.c_str(), saved_->c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> saved_;
};

// Every line of the project's sources (src/, include/, apps/) for which `hit(file, line)`
// holds, as "file:N" with file relative to the source root: the scans that check a rule is
// written in one place.
inline std::vector<std::string> find_in_sources(
    const std::function<bool(const std::string& file, const std::string& line)>& hit) {
  const std::filesystem::path root(TXL_SOURCE_DIR);
  std::vector<std::string> found;
  for (const char* dir : {"src", "include", "apps"}) {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root / dir)) {
      if (!entry.is_regular_file()) continue;
      const std::string file = std::filesystem::relative(entry.path(), root).generic_string();
      std::ifstream in(entry.path());
      std::string line;
      for (int n = 1; std::getline(in, line); ++n) {
        if (hit(file, line)) found.push_back(file + ":" + std::to_string(n));
      }
    }
  }
  return found;
}

}  // namespace txl::testing
