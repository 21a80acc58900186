// Known positives for the probes (issue 42): a two-layer relative model whose weights are set
// by hand to copy by content, an induction circuit (Olsson et al. 2022), and its negative
// control. Layer 1 holds two positional heads (their position terms peak at distances 1 and
// 2) that write each position's previous and second previous token into subspaces of their
// own; layer 2's head matches the current and previous tokens against those (a bigram match)
// and writes the token that followed the match into a fourth subspace, which the output layer
// reads. The copy probe must find a clear gain on it and none on the control (the same model
// with layer 2's reading of the past cut); passkey must find the key where the window holds
// few look-alikes of the cue; attention must show layer 1's heads at distances 1 and 2. The models
// come in through txl import, as a model trained elsewhere would.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <numeric>
#include <random>

#include "cli_harness.h"
#include "txl/config/config.h"
#include "txl/model/positional.h"
#include "txl/run/weight_file.h"
#include "txl/run/weight_names.h"

namespace txl {
namespace {

using testing::read_text;
using testing::run_txl;
using testing::write_text;

constexpr int64_t kWords = 30;          // w0..w29, with <unk> and <eos>: 32 ids
constexpr int64_t kVocab = kWords + 2;  // one-hot subspaces of 32 dims each
// A: the token, B: the previous token, D: the one before, C: the prediction.
constexpr int64_t kA = 0, kB = kVocab, kD = 2 * kVocab, kC = 3 * kVocab, kModel = 4 * kVocab;
constexpr int64_t kHead = 2 * kVocab;  // d_head: a query holds A and B, a key B and D

// `lines` lines of 16 words drawn uniformly from w0 .. w{words-1}.
std::string random_lines(int lines, uint32_t seed, int64_t words = kWords) {
  std::mt19937 rng(seed);
  std::string text;
  for (int l = 0; l < lines; ++l) {
    for (int w = 0; w < 16; ++w) text += (w ? " w" : "w") + std::to_string(rng() % words);
    text += "\n";
  }
  return text;
}

nlohmann::json induction_config(const std::string& corpus) {
  return {{"data", {{"dir", corpus}, {"tokenizer", "word"}}},
          {"model",
           {{"pos_encoding", "relative"},
            {"n_layer", 2},
            {"d_model", kModel},
            {"n_head", kModel / kHead},
            {"d_head", kHead},
            {"d_inner", 8},
            {"dropout", 0.0},
            {"tie_weights", false}}},
          {"train", {{"tgt_len", 64}, {"mem_len", 64}}}};
}

// Identity from subspace `from` (columns, the input) into rows `to` (the output) of `w`.
void route(torch::Tensor w, int64_t to, int64_t from, double gain) {
  for (int64_t i = 0; i < kVocab; ++i) w[to + i][from + i] = gain;
}

// A head whose score is its position term alone, v . W_r R[n], peaking at distance n = d
// (R[d] . R[n] = sum_i cos(f_i (n - d))), and whose value is A.
void positional_head(std::map<std::string, torch::Tensor>& p, int64_t head, int64_t d) {
  auto qkv = p["blocks.0.attn.qkv.weight"];  // rows: q, k, v, each n_head x d_head
  route(qkv, 2 * kModel + head * kHead, kA, 1.0);
  p["blocks.0.attn.score.v"][head][0] = 1.0;
  const auto r = relative_sinusoids(d + 1, kModel, 0, torch::TensorOptions())[0];  // R[d]
  p["blocks.0.attn.score.w_r.weight"][head * kHead].copy_(40.0 * r);
}

// The circuit's weights; `copies` false cuts what layer 2 reads from the past (its value), the
// negative control: every prediction is then made without context.
void set_induction_weights(TransformerLM& model, bool copies) {
  torch::NoGradGuard no_grad;
  std::map<std::string, torch::Tensor> p;
  for (auto& item : model->named_parameters()) p[item.key()] = item.value();
  for (auto& [name, t] : p) t.zero_();
  for (auto& [name, t] : p)
    if (name.find("norm.weight") != std::string::npos) t.fill_(1.0);
  route(p["embedding.weight"].t(), kA, 0, 1.0);  // id w -> A[w]
  // Layer 1: the previous token into B (head 0), the one before into D (head 1).
  positional_head(p, 0, 1);
  positional_head(p, 1, 2);
  route(p["blocks.0.attn.out.weight"], kB, 0, 1.0);
  route(p["blocks.0.attn.out.weight"], kD, kHead, 1.0);
  // Layer 2, head 0: query (A, B) . key (B, D) counts how many of (this token, the previous
  // one) equal (the key's previous token, the one before); value A (the token at the match),
  // written to C.
  auto qkv = p["blocks.1.attn.qkv.weight"];
  route(qkv, 0, kA, 1.5);
  route(qkv, kVocab, kB, 1.5);
  route(qkv, kModel, kB, 1.5);
  route(qkv, kModel + kVocab, kD, 1.5);
  if (copies) route(qkv, 2 * kModel, kA, 1.0);
  route(p["blocks.1.attn.out.weight"], kC, 0, 1.0);
  route(p["output.weight"], 0, kC, 2.0);  // logit of w = 2 C[w]
}

struct InductionRuns {
  std::string dir, copier, control;
};

const InductionRuns& induction_runs() {
  static const InductionRuns runs = [] {
    InductionRuns r;
    r.dir = testing::scratch_dir("induction");
    const std::string corpus =
        testing::write_corpus(r.dir + "/corpus", random_lines(200, 1),
                              random_lines(300, 2, kWords - 10), random_lines(50, 3));
    // The evaluated split leaves w20..w29 out: the passkey probe's keys (its rarest tokens).
    const auto config = induction_config(corpus);
    write_text(r.dir + "/config.json", config.dump());
    std::string vocab = "<unk>\n<eos>\n";
    for (int64_t w = 0; w < kWords; ++w) vocab += "w" + std::to_string(w) + "\n";
    write_text(r.dir + "/vocab.txt", vocab);
    for (const bool copies : {true, false}) {
      auto model = make_model(config_from_json(config, "induction").model, kVocab, torch::kCPU);
      set_induction_weights(model, copies);
      const std::string name = copies ? "copier" : "control";
      write_safetensors(r.dir + "/" + name + ".safetensors",
                        named_weights(model, WeightNaming::kTxl), {});
      const auto imported = run_txl({"import", "--weights", r.dir + "/" + name + ".safetensors",
                                     "--vocab", r.dir + "/vocab.txt", "--config",
                                     r.dir + "/config.json", "--run-dir", r.dir + "/" + name});
      EXPECT_EQ(imported.code, 0) << imported.err;
      (copies ? r.copier : r.control) = r.dir + "/" + name;
    }
    return r;
  }();
  return runs;
}

// series -> x -> value of one probe in an eval --json file.
std::map<std::string, std::map<double, double>> probe_values(const std::string& json,
                                                             const std::string& probe) {
  std::map<std::string, std::map<double, double>> out;
  const auto j = nlohmann::json::parse(read_text(json));
  for (const auto& m : j.at("probes").at(probe).at("metrics"))
    out[m.at("series").get<std::string>()][m.at("x").get<double>()] = m.at("value").get<double>();
  return out;
}

TEST(InductionProbes, CopyFindsTheCopierAndNotItsControl) {
  const auto& r = induction_runs();
  std::map<std::string, std::map<double, double>> gains;
  for (const std::string& run : {r.copier, r.control}) {
    const std::string json = run + "/probes.json";
    const auto e =
        run_txl({"eval", "--run", run, "--lengths", "64", "--probes", "copy", "--probe-set",
                 "copy.distances=16,64,256,1024", "--probe-set", "copy.count=40", "--json", json});
    ASSERT_EQ(e.code, 0) << e.err;
    gains[run] = probe_values(json, "copy").at("copy gain (nats/token)");
    for (const auto& [d, g] : gains[run])
      std::printf("%s d=%g copy gain %.3f\n", run.c_str(), d, g);
  }
  for (const auto& [d, g] : gains[r.copier]) EXPECT_GT(g, 1.0) << "the copier, d " << d;
  for (const auto& [d, g] : gains[r.control]) EXPECT_LT(std::abs(g), 0.05) << "control, d " << d;
}

// Mean over depths of the passkey accuracy at each length.
std::map<double, double> passkey_by_length(const std::string& json) {
  std::map<double, std::vector<double>> cells;
  for (const auto& [series, values] : probe_values(json, "passkey"))
    if (series.rfind("key accuracy", 0) == 0)
      for (const auto& [length, accuracy] : values) cells[length].push_back(accuracy);
  std::map<double, double> out;
  for (const auto& [length, v] : cells)
    out[length] = std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
  return out;
}

TEST(InductionProbes, PasskeyAndAttentionFindTheCircuit) {
  const auto& r = induction_runs();
  std::map<std::string, std::map<double, double>> accuracy;
  for (const std::string& run : {r.copier, r.control}) {
    const std::string json = run + "/passkey.json";
    const auto e =
        run_txl({"eval", "--run", run, "--lengths", "64,256", "--probes", "passkey,attention",
                 "--probe-set", "passkey.lengths=64,1024", "--probe-set", "passkey.trials=20",
                 "--probe-set", "attention.windows=4", "--json", json});
    ASSERT_EQ(e.code, 0) << e.err;
    accuracy[run] = passkey_by_length(json);
    for (const auto& [length, a] : accuracy[run])
      std::printf("%s passkey accuracy at L=%g: %.3f\n", run.c_str(), length, a);
    if (run != r.copier) continue;
    // Layer 1's two heads sit at distances 1 and 2: all but no entropy, mean distance 1.5.
    const auto attention = probe_values(json, "attention");
    for (const double length : {64.0, 256.0}) {
      EXPECT_LT(attention.at("attention entropy (nats), layer 1").at(length), 0.05);
      EXPECT_NEAR(attention.at("mean attention distance (tokens), layer 1").at(length), 1.5, 0.1);
    }
  }
  // The key is found where the window holds few look-alikes of the cue's last two tokens,
  // less often in longer windows (more of them), never by the control.
  EXPECT_GE(accuracy[r.copier].at(64), 0.8);
  EXPECT_LT(accuracy[r.copier].at(1024), accuracy[r.copier].at(64));
  for (const auto& [length, a] : accuracy[r.control]) EXPECT_EQ(a, 0.0) << "control, L " << length;
}

}  // namespace
}  // namespace txl
