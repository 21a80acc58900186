// The training-memory estimate that refuses models too big for the machine:
//  - its parameter count equals count_parameters of the built model, for every encoding,
//    tied and untied output, pre- and post-norm;
//  - it stays far below any machine's memory for the shipped configs, so none is refused,
//    and far above it for a mistyped model.n_layer;
//  - the refusal names the estimate and the available memory in GB.
#include "txl/train/memory_estimate.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "test_util.h"
#include "txl/model/transformer.h"
#include "txl/util/error.h"

namespace txl {
namespace {

constexpr double kGB = 1e9;

TEST(MemoryEstimate, ParameterCountEqualsTheBuiltModels) {
  struct Case {
    PosEncoding encoding;
    bool tie_weights, pre_norm;
    int64_t vocab;
  };
  const std::vector<Case> cases = {
      {PosEncoding::kRelative, true, false, 37},
      {PosEncoding::kAbsolute, false, false, 50},
      {PosEncoding::kRelativeLearned, true, true, 11},
      {PosEncoding::kRelativeLearned, false, false, 23},
      {PosEncoding::kAbsolute, true, true, 2},
  };
  for (const auto& c : cases) {
    ModelConfig m = testing::tiny_model(c.encoding);
    m.tie_weights = c.tie_weights;
    m.pre_norm = c.pre_norm;
    m.n_layer = 3;
    m.d_inner = 24;
    const TransformerLM model(m, c.vocab);
    EXPECT_EQ(parameter_count(m, c.vocab), static_cast<double>(count_parameters(*model)))
        << to_string(c.encoding) << " tie " << c.tie_weights << " pre_norm " << c.pre_norm;
  }
}

Config shipped_config(const std::string& name) {
  const std::string path = std::string(TXL_SOURCE_DIR) + "/configs/" + name;
  return config_from_json(read_json_file(path), path);
}

TEST(MemoryEstimate, ShippedConfigsNeedWellUnderAGigabyte) {
  size_t seen = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(TXL_SOURCE_DIR) + "/configs")) {
    if (entry.path().extension() != ".json") continue;
    ++seen;
    const Config c = shipped_config(entry.path().filename().string());
    // 10000: Penn Treebank's vocabulary, larger than the char corpora's.
    const auto e = estimate_training_memory(c, 10000, c.train.tgt_len);
    EXPECT_LT(e.total_bytes(), 1 * kGB) << entry.path();
    EXPECT_NO_THROW(check_training_memory(e, 2 * kGB)) << entry.path();
  }
  EXPECT_GE(seen, 5u);
}

TEST(MemoryEstimate, CountsAdamWStateGradientsAndActivations) {
  Config c = shipped_config("ptb-word-relative.json");
  const auto e = estimate_training_memory(c, 10000, c.train.tgt_len);
  EXPECT_EQ(e.weight_bytes, 4 * e.parameters);
  EXPECT_EQ(e.gradient_bytes, e.weight_bytes);
  EXPECT_EQ(e.optimizer_bytes, 2 * e.weight_bytes);
  EXPECT_GT(e.activation_bytes, 0);
  // Longer segments and more streams keep more activations; the weights stay the same.
  c.train.batch_size *= 2;
  const auto wider = estimate_training_memory(c, 10000, 2 * c.train.tgt_len);
  EXPECT_GT(wider.activation_bytes, 3 * e.activation_bytes);
  EXPECT_EQ(wider.weight_bytes, e.weight_bytes);
}

TEST(MemoryEstimate, AMistypedLayerCountIsRefusedNamingBothSizesInGB) {
  Config c = shipped_config("kjv-char-relative.json");
  c.model.n_layer = 100000;
  const auto e = estimate_training_memory(c, 80, c.train.tgt_len);
  EXPECT_GT(e.total_bytes(), 100 * kGB);
  try {
    check_training_memory(e, 16 * kGB);
    ADD_FAILURE() << "expected InputError";
  } catch (const InputError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("GB"), std::string::npos) << message;
    EXPECT_NE(message.find("16.0 GB of memory is available"), std::string::npos) << message;
    EXPECT_NE(message.find("model.n_layer"), std::string::npos) << message;
  }
  // Unknown available memory (0) refuses nothing.
  EXPECT_NO_THROW(check_training_memory(e, 0));
}

}  // namespace
}  // namespace txl
