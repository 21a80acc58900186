// End-to-end properties of training and evaluation on tiny fixtures:
//  - a tiny model overfits a short repeated text (loss falls below a stated bound);
//  - evaluation after reloading a checkpoint equals evaluation before saving.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "test_util.h"
#include "txl/data/tokenizer.h"
#include "txl/eval/evaluate.h"
#include "txl/model/transformer.h"
#include "txl/run/checkpoint.h"
#include "txl/train/batcher.h"
#include "txl/train/schedule.h"

namespace txl {
namespace {

std::vector<int32_t> tiny_text_ids(Vocab* vocab_out = nullptr) {
  std::string text;
  for (int i = 0; i < 40; ++i) text += "the cat sat on the mat.\n";
  DataConfig dc;
  dc.tokenizer = TokenizerKind::kChar;
  auto vocab = build_vocab(text, dc, "fixture");
  if (vocab_out) *vocab_out = vocab;
  return encode(text, vocab, "fixture");
}

TEST(Training, TinyModelOverfitsShortText) {
  torch::manual_seed(1);
  Vocab vocab;
  const auto ids = tiny_text_ids(&vocab);
  auto cfg = testing::tiny_model(PosEncoding::kRelative);
  cfg.init_std = 0.02;
  TransformerLM model(cfg, vocab.size());
  TrainConfig tc;
  tc.lr = 1e-2;
  tc.warmup_steps = 10;
  tc.max_steps = 300;
  torch::optim::AdamW opt(model->parameters(), torch::optim::AdamWOptions(tc.lr));
  StreamBatcher batcher(ids, /*batch_size=*/4, /*tgt_len=*/16);
  Memory memory;
  model->train();
  double first = 0.0, last = 0.0;
  for (int64_t step = 1; step <= tc.max_steps; ++step) {
    auto seg = batcher.next();
    if (seg.starts_epoch) memory = Memory{};
    for (auto& g : opt.param_groups())
      static_cast<torch::optim::AdamWOptions&>(g.options()).lr(learning_rate(tc, step));
    ForwardOptions fwd;
    fwd.targets = seg.targets;
    fwd.keep_memory = 16;
    auto out = model->forward(seg.inputs, memory, fwd);
    memory = out.memory;
    auto loss = out.nll.mean();
    opt.zero_grad();
    loss.backward();
    torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
    opt.step();
    if (step == 1) first = loss.item<double>();
    last = loss.item<double>();
  }
  // The text is one 24-character sentence repeated: after the first sentence it is fully
  // predictable. Uniform over 13 symbols is ln 13 = 2.56 nats; a model that learned the
  // repetition is far below 0.3.
  EXPECT_GT(first, 2.0);
  EXPECT_LT(last, 0.3) << "first loss " << first;
}

TEST(Checkpoint, EvaluationAfterReloadEqualsBeforeSaving) {
  torch::manual_seed(2);
  const auto ids = tiny_text_ids();
  for (auto encoding : testing::all_encodings()) {
    SCOPED_TRACE(encoding_traits(encoding).name);
    auto cfg = testing::tiny_model(encoding);
    TransformerLM model(cfg, 14);
    EvalRequest request;
    request.length = 20;
    const auto before = evaluate(model, ids, request);

    const std::string path =
        ::testing::TempDir() + "/txl_reload_" + std::to_string(static_cast<int>(encoding)) + ".pt";
    TrainState state;
    state.config = nlohmann::json::object();
    save_checkpoint(path, state, model, nullptr, Memory{});
    torch::manual_seed(99);  // a different initialisation, overwritten by the load
    TransformerLM reloaded(cfg, 14);
    load_checkpoint(path, reloaded, nullptr);
    const auto after = evaluate(reloaded, ids, request);
    EXPECT_EQ(before.tokens, after.tokens);
    EXPECT_EQ(before.nll, after.nll) << "encoding " << to_string(encoding);
    std::filesystem::remove(path);
  }
}

}  // namespace
}  // namespace txl
