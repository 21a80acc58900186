// The checkpoint tests' fixtures: a small saved checkpoint, the check of a refused load, where
// the blocks of a file lie (checkpoint.h) for tests that damage or forge one part of it, and a
// writer of format version 2 files as txl wrote them before version 3.
#pragma once

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_harness.h"
#include "test_util.h"
#include "txl/config/config.h"
#include "txl/model/memory.h"
#include "txl/model/transformer.h"
#include "txl/run/checkpoint.h"
#include "txl/run/train_state.h"
#include "txl/util/error.h"
#include "txl/util/hash.h"

namespace txl::testing {

inline uint64_t get_u64(const std::string& bytes, size_t at) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(bytes[at + i]);
  return v;
}

inline void put_u64(std::string& bytes, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) bytes[at + i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}

inline uint32_t get_u32(const std::string& bytes, size_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(bytes[at + i]);
  return v;
}

constexpr int64_t kSampleVocab = 11;

struct Saved {
  std::string path;
  TrainState state;
  TransformerLM model{nullptr};
  std::unique_ptr<torch::optim::AdamW> optimizer;
  Memory memory;
};

inline ModelConfig small_model() {
  auto c = tiny_model(PosEncoding::kRelative);
  c.n_layer = 1;
  return c;
}

// A model after two optimizer steps, with memory and a training state of distinct values
// (not saved: save_sample saves it, the version 2 tests write it their way).
inline Saved train_sample(const std::string& path, const ModelConfig& cfg = small_model()) {
  Saved s;
  s.path = path;
  torch::manual_seed(3);
  s.model = TransformerLM(cfg, kSampleVocab);
  s.optimizer = std::make_unique<torch::optim::AdamW>(
      s.model->parameters(), torch::optim::AdamWOptions(0.01).weight_decay(0.1));
  auto tokens = torch::randint(kSampleVocab, {2, 6}, torch::kInt64);  // [B, Q]
  for (int step = 0; step < 2; ++step) {
    ForwardOptions fwd;
    fwd.targets = torch::randint(kSampleVocab, {2, 6}, torch::kInt64);
    fwd.keep_memory = 6;
    auto out = s.model->forward(tokens, s.memory, fwd);
    s.memory = out.memory;
    s.optimizer->zero_grad();
    out.nll.mean().backward();
    s.optimizer->step();
  }
  static_cast<torch::optim::AdamWOptions&>(s.optimizer->param_groups()[0].options()).lr(0.0042);
  s.state.step = 2;
  s.state.tokens_seen = 24;
  s.state.stream_position = 12;
  s.state.best_valid_ppl = 3.5;
  s.state.config = nlohmann::json{{"model", {{"n_layer", 1}}}};
  s.state.vocab_checksum = 0xFEDCBA9876543210ull;  // above 2^63: must survive as text
  s.state.lr = 0.0042;
  s.state.skipped_steps = 1;
  s.state.train_tokens = 1234;
  s.state.train_checksum = 42;
  s.state.interval_loss_sum = 1.0 / 3.0;
  s.state.interval_steps = 3;
  s.state.interval_finite = 2;
  s.state.interval_seconds = 0.25;
  return s;
}

// train_sample's checkpoint, saved to `name` in a temp folder.
inline Saved save_sample(const std::string& name, const ModelConfig& cfg = small_model()) {
  Saved s = train_sample(fresh_dir("ckpt") + "/" + name, cfg);
  save_checkpoint(s.path, s.state, s.model, s.optimizer.get(), s.memory);
  return s;
}

// Loading `path` into a fresh small model (with an optimizer: a resume; without: weights
// only) must throw InputError naming the file and containing one of `words`.
inline void expect_load_error(const std::string& path, const std::vector<std::string>& words,
                              const ModelConfig& cfg = small_model(), int64_t vocab = kSampleVocab,
                              bool with_optimizer = true) {
  TransformerLM model(cfg, vocab);
  torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(0.01));
  try {
    load_checkpoint(path, model, with_optimizer ? &optimizer : nullptr);
    ADD_FAILURE() << path << " loaded without error";
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(path), std::string::npos) << message;
    bool found = false;
    for (const auto& w : words) found = found || message.find(w) != std::string::npos;
    EXPECT_TRUE(found) << "message lacks any expected word: " << message;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not an InputError: " << e.what();
  }
}

// Whether `a` and `b` hold equal parameters.
inline bool same_weights(TransformerLM a, TransformerLM b) {  // handles: shared
  const auto pa = a->named_parameters();
  const auto pb = b->named_parameters();
  if (pa.size() != pb.size()) return false;
  for (const auto& item : pa) {
    if (!pb.contains(item.key()) || !torch::equal(item.value(), pb[item.key()])) return false;
  }
  return true;
}

// A version 3 file's blocks: [begin, end) offsets, and where each section's checksum lies.
struct CheckpointLayout {
  size_t meta_at = 64, weights_at = 0, training_at = 0, end = 0;
  static constexpr size_t kWeightsHashAt = 40, kTrainingHashAt = 56;
  explicit CheckpointLayout(const std::string& bytes)
      : weights_at(meta_at + get_u64(bytes, 16)),
        training_at(weights_at + get_u64(bytes, 32)),
        end(training_at + get_u64(bytes, 48)) {}
  size_t weights_size() const { return training_at - weights_at; }
  size_t training_size() const { return end - training_at; }
};

// Recomputes the checksum of the section [at, at + size) stored at `hash_at`, so that damage
// there passes the checksum (a forged file).
inline void reseal(std::string& bytes, size_t at, size_t size, size_t hash_at) {
  put_u64(bytes, hash_at, xxh64(bytes.data() + at, size));
}

// A format version 2 checkpoint, as txl wrote them before version 3: a 48-byte header (magic,
// version 2, reserved, meta length and XXH64, payload length and XXH64), the meta block and
// one archive holding model/, optimizer/ (when given), memory/ (when not empty) and rng. The
// v2 writer kept only as this fixture.
inline void write_v2_checkpoint(const std::string& path, const TrainState& state,
                                TransformerLM& model, torch::optim::Optimizer* optimizer,
                                const Memory& memory) {
  torch::serialize::OutputArchive archive, model_archive, opt_archive, mem_archive;
  model->save(model_archive);
  archive.write("model", model_archive);
  nlohmann::json groups = nlohmann::json::array();
  if (optimizer) {
    optimizer->save(opt_archive);
    archive.write("optimizer", opt_archive);
    for (auto& group : optimizer->param_groups()) {
      const auto& o = static_cast<torch::optim::AdamWOptions&>(group.options());
      groups.push_back({{"lr", o.lr()},
                        {"beta1", std::get<0>(o.betas())},
                        {"beta2", std::get<1>(o.betas())},
                        {"eps", o.eps()},
                        {"weight_decay", o.weight_decay()},
                        {"amsgrad", o.amsgrad()}});
    }
  }
  for (size_t l = 0; l < memory.layers.size(); ++l) {
    mem_archive.write(std::to_string(l), memory.layers[l], /*is_buffer=*/true);
  }
  if (!memory.empty()) archive.write("memory", mem_archive);
  archive.write("rng", at::detail::getDefaultCPUGenerator().get_state(), /*is_buffer=*/true);
  std::string payload;
  archive.save_to([&](const void* data, size_t size) {
    payload.append(static_cast<const char*>(data), size);
    return size;
  });
  nlohmann::json meta = {{"format", "txl-checkpoint"}, {"version", 2}};
  write_train_state(state, meta);
  Config c;
  c.model = model->config();
  meta["model_config"] = config_to_json(c).at("model");
  meta["vocab_size"] = model->vocab_size();
  meta["memory_layers"] = memory.layers.size();
  meta["optimizer_groups"] = groups;
  const std::string text = meta.dump();
  std::string header("TXLCKPT\n\x02\0\0\0\0\0\0\0", 16);
  header += std::string(32, '\0');
  put_u64(header, 16, text.size());
  put_u64(header, 24, xxh64(text.data(), text.size()));
  put_u64(header, 32, payload.size());
  put_u64(header, 40, xxh64(payload.data(), payload.size()));
  std::ofstream(path, std::ios::binary | std::ios::trunc) << header << text << payload;
}

}  // namespace txl::testing
