// Fine-tuning (train/init_from.h): txl train --init-from RUN starts a new run from RUN's
// weights and vocabulary. Started from an import of run A, before any update, it evaluates
// exactly as A; a few steps change it and leave a run that resumes; a config of another shape,
// a bad --init-from and --resume of an imported run are refused naming the fix, writing
// nothing. The shape keys are exactly the keys that change a parameter's shape.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "txl/config/config_diff.h"
#include "txl/config/config_keys.h"
#include "txl/config/encodings.h"
#include "txl/data/vocab.h"
#include "txl/model/transformer.h"
#include "txl/util/hash.h"

namespace txl {
namespace {

namespace fs = std::filesystem;
using testing::read_text;
using testing::run_txl;
using testing::write_text;

// The table of an eval report (the lines from the method on): what two runs must share.
std::string eval_table(const std::string& out) {
  const size_t from = out.find("nonoverlap");
  return out.substr(from, out.find("wrote ") - from);
}

// Run A (12 steps, relative, char), its export and B, the import of that export.
struct Imported {
  std::string dir, corpus, a, b, weights, config;
};

Imported import_tiny_run(const std::string& name) {
  Imported r;
  r.dir = testing::scratch_dir(name);
  r.corpus = testing::write_tiny_english_corpus(r.dir + "/corpus");
  r.a = r.dir + "/a";
  r.b = r.dir + "/b";
  r.weights = r.dir + "/m.safetensors";
  r.config = r.a + ".config.json";  // train_tiny_run's config of A
  EXPECT_TRUE(testing::train_tiny_run(r.corpus, r.a, "relative", "char", 12));
  auto out = run_txl({"export", "--run", r.a, "--out", r.weights});
  EXPECT_EQ(out.code, 0) << out.err;
  out = run_txl({"import", "--weights", r.weights, "--vocab", r.dir + "/m.vocab.txt", "--config",
                 r.dir + "/m.config.json", "--run-dir", r.b});
  EXPECT_EQ(out.code, 0) << out.err;
  return r;
}

// A's config with `changes` ({"model": {...}}-shaped) merged in, written to `path`.
std::string config_like(const Imported& r, const std::string& path, const nlohmann::json& changes) {
  nlohmann::json j = nlohmann::json::parse(read_text(r.config));
  j.merge_patch(changes);
  write_text(path, j.dump(2));
  return path;
}

TEST(FineTune, BeforeAnyUpdateTheImportedWeightsEvaluateExactlyAsTheRunExported) {
  const Imported r = import_tiny_run("finetune_same");
  const std::string c = r.dir + "/c";
  // One step whose loss is made NaN and skipped (trainer.h's test hook): the run ends at step
  // 1 with the weights it started from, written as a normal checkpoint.
  const auto train = run_txl({"train", "--config", r.config, "--init-from", r.b, "--run-dir", c,
                              "--set", "train.max_steps=1", "--set", "train.skip_nonfinite=true"},
                             {"TXL_INJECT_NAN_AT_STEP=1"});
  ASSERT_EQ(train.code, 0) << train.err;
  EXPECT_NE(train.err.find("init: weights from " + r.b + "/checkpoint.pt (step 0)"),
            std::string::npos)
      << train.err;
  const auto a = run_txl({"eval", "--run", r.a, "--lengths", "16", "--json", r.dir + "/a.json"});
  ASSERT_EQ(a.code, 0) << a.err;
  const auto got = run_txl(
      {"eval", "--run", c, "--lengths", "16", "--checkpoint", "last", "--json", r.dir + "/c.json"});
  ASSERT_EQ(got.code, 0) << got.err;
  EXPECT_EQ(eval_table(got.out), eval_table(a.out));
  // The header and the JSON say where the weights came from, down to the file imported.
  const std::string ckpt = read_text(r.b + "/checkpoint.pt");
  const std::string from = "fine-tuned from " + fs::absolute(r.b).lexically_normal().string() +
                           " (checkpoint.pt step 0, XXH64 " +
                           hex64(xxh64(ckpt.data(), ckpt.size())) + "; imported from " +
                           fs::absolute(r.weights).string() + " (XXH64 ";
  EXPECT_NE(got.out.find(from), std::string::npos) << got.out;
  const auto report = nlohmann::json::parse(read_text(r.dir + "/c.json"));
  // Every number of the results in full (NLL sums, per-window NLL, the interval).
  EXPECT_EQ(report.at("results"),
            nlohmann::json::parse(read_text(r.dir + "/a.json")).at("results"));
  EXPECT_EQ(report.at("origin").get<std::string>().rfind(from, 0), 0u) << report.dump();
  EXPECT_EQ(read_text(c + "/vocab.json"), read_text(r.b + "/vocab.json"));
  testing::cleanup_scratch();
}

TEST(FineTune, AFewStepsChangeTheModelAndLeaveARunThatResumes) {
  const Imported r = import_tiny_run("finetune_steps");
  // Another corpus, with characters the vocabulary lacks (read as <unk>), and other values
  // for keys that set no shape.
  const std::string text = testing::tiny_english(300, 5) + "Zebra quiz 42\n";
  const std::string corpus2 =
      testing::write_corpus(r.dir + "/corpus2", text, testing::tiny_english(40, 6),
                            testing::tiny_english(40, 7) + "Zq 4\n");
  const std::string config = config_like(
      r, r.dir + "/d.json",
      {{"data", {{"dir", corpus2}}},
       {"model", {{"dropout", 0.1}, {"clamp_len", 12}}},
       {"train", {{"max_steps", 4}, {"lr", 0.002}, {"tgt_len", 12}, {"batch_size", 2}}}});
  const std::string d = r.dir + "/d";
  auto out = run_txl({"train", "--config", config, "--init-from", r.b, "--run-dir", d});
  ASSERT_EQ(out.code, 0) << out.err;
  EXPECT_NE(out.err.find("read as <unk>"), std::string::npos) << out.err;
  // B's weights learned something: the first step's loss is below uniform guessing over the
  // vocabulary, which drawn weights do not beat (2.97 against ln 19 = 2.94 when
  // take_init_weights is left out; 2.79 with it).
  const auto tuned = testing::read_losses(d);
  const double uniform = std::log(double(Vocab::load(r.b + "/vocab.json").size()));
  ASSERT_EQ(tuned.size(), 4u);
  std::printf("step 1 loss %.4f (uniform guessing %.4f), step 4 %.4f\n", tuned.at(1), uniform,
              tuned.at(4));
  EXPECT_LT(tuned.at(1), uniform - 0.05) << "the first step does not start from B's weights";
  EXPECT_NE(tuned.at(4), tuned.at(1));
  // A normal run: --resume continues it (with the vocabulary it keeps, not the corpus's).
  out = run_txl({"train", "--resume", d, "--set", "train.max_steps=6"});
  ASSERT_EQ(out.code, 0) << out.err;
  EXPECT_NE(out.err.find("resumed at step 4"), std::string::npos) << out.err;
  EXPECT_EQ(testing::read_losses(d).size(), 6u);
  const auto eval = run_txl({"eval", "--run", d, "--lengths", "12"});
  ASSERT_EQ(eval.code, 0) << eval.err;
  EXPECT_NE(eval.out.find("fine-tuned from "), std::string::npos) << eval.out;
  testing::cleanup_scratch();
}

TEST(FineTune, AConfigOfAnotherShapeIsRefusedNamingEachKeyAndWritesNothing) {
  const Imported r = import_tiny_run("finetune_shape");
  const std::string e = r.dir + "/e";
  const std::string config = config_like(
      r, r.dir + "/e.json",
      {{"model", {{"n_layer", 2}, {"d_inner", 48}}}, {"data", {{"tokenizer", "word"}}}});
  const auto out = run_txl({"train", "--config", config, "--init-from", r.b, "--run-dir", e});
  EXPECT_EQ(out.code, 2) << out.err;
  for (const std::string key :
       {"model.n_layer: 1 vs 2", "model.d_inner: 32 vs 48", "data.tokenizer: \"char\" vs \"word\""})
    EXPECT_NE(out.err.find(key), std::string::npos) << key << "\n" << out.err;
  EXPECT_FALSE(fs::exists(e));
  testing::cleanup_scratch();
}

TEST(FineTune, ResumingAnImportedRunIsRefusedNamingInitFrom) {
  const Imported r = import_tiny_run("finetune_resume_import");
  const std::string before = read_text(r.b + "/checkpoint.pt");
  const auto out = run_txl({"train", "--resume", r.b});
  EXPECT_EQ(out.code, 2) << out.err;
  EXPECT_NE(out.err.find("holds weights only"), std::string::npos) << out.err;
  EXPECT_NE(out.err.find("txl train --config FILE --init-from " + r.b + " to fine-tune it"),
            std::string::npos)
      << out.err;
  EXPECT_EQ(read_text(r.b + "/checkpoint.pt"), before);
  testing::cleanup_scratch();
}

TEST(FineTune, ABadInitFromIsRefusedAndWritesNothing) {
  const Imported r = import_tiny_run("finetune_hostile");
  const std::string empty_run = r.dir + "/empty", no_ckpt = r.dir + "/no_ckpt";
  fs::create_directories(empty_run);
  fs::create_directories(no_ckpt);
  fs::copy_file(r.b + "/config.json", no_ckpt + "/config.json");
  fs::copy_file(r.b + "/vocab.json", no_ckpt + "/vocab.json");
  const std::string target = r.dir + "/new";
  struct Case {
    std::string name;
    std::vector<std::string> args;
    std::string needle;
    std::string run_dir;  // must not be written (or changed, when it holds a run)
  };
  const std::vector<Case> cases = {
      {"missing", {"--init-from", r.dir + "/nope"}, "no such run directory", target},
      {"a file", {"--init-from", r.weights}, "is a regular file, expected a run directory", target},
      {"no run", {"--init-from", empty_run}, "config.json is missing", target},
      {"no checkpoint", {"--init-from", no_ckpt}, "no checkpoint to start from", target},
      {"itself", {"--init-from", r.b, "--force"}, "is also the new run's --run-dir", r.b},
      {"with resume", {"--init-from", r.b, "--resume", r.a}, "excludes", r.a},
      {"checkpoint alone", {"--checkpoint", "last"}, "requires --init-from", target},
      {"bad checkpoint", {"--init-from", r.b, "--checkpoint", "first"}, "\"first\"", target},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const bool exists = fs::exists(c.run_dir);
    const std::string ckpt = exists ? read_text(c.run_dir + "/checkpoint.pt") : "";
    std::vector<std::string> args = {"train", "--config", r.config};
    for (const auto& a : c.args) args.push_back(a);
    if (c.name != "with resume") args.insert(args.end(), {"--run-dir", c.run_dir});
    const auto out = run_txl(args);
    EXPECT_EQ(out.code, 2) << out.err;
    EXPECT_NE(out.output.find(c.needle), std::string::npos) << out.output;
    if (exists)
      EXPECT_EQ(read_text(c.run_dir + "/checkpoint.pt"), ckpt);
    else
      EXPECT_FALSE(fs::exists(c.run_dir));
  }
  testing::cleanup_scratch();
}

// Named parameters and their shapes: what a checkpoint's weights must match.
std::map<std::string, std::vector<int64_t>> parameter_shapes(const Config& config) {
  std::map<std::string, std::vector<int64_t>> out;
  const TransformerLM model = make_model(config.model, 40, torch::kCPU);
  for (const auto& p : model->named_parameters()) out[p.key()] = p.value().sizes().vec();
  return out;
}

// The shape keys are the keys that change a parameter's shape: every model key and every
// encoding option is changed alone (with what validation needs beside it) and must be a shape
// difference exactly when the model's parameters change shape. A key added without an entry
// here fails the test, so it cannot go unclassified.
TEST(FineTune, TheShapeKeysAreExactlyTheKeysThatChangeAParameterShape) {
  const nlohmann::json base = {
      {"data", {{"dir", "unused"}, {"tokenizer", "word"}}},  // word: adaptive needs it
      {"model", {{"n_layer", 1}, {"d_model", 16}, {"n_head", 2}, {"d_head", 8}, {"d_inner", 32}}},
      {"train", {{"tgt_len", 8}, {"mem_len", 8}}}};
  // key -> (encoding, the changes), each read over `base`.
  const std::map<std::string, std::pair<std::string, nlohmann::json>> changes = {
      {"pos_encoding", {"relative", {{"pos_encoding", "rope"}}}},
      {"n_layer", {"relative", {{"n_layer", 2}}}},
      {"d_model", {"relative", {{"d_model", 32}, {"d_head", 16}}}},
      {"n_head", {"relative", {{"n_head", 4}, {"d_head", 4}}}},
      {"d_head", {"relative", {{"d_head", 4}, {"n_head", 4}}}},
      {"d_inner", {"relative", {{"d_inner", 48}}}},
      {"dropout", {"relative", {{"dropout", 0.3}}}},
      {"dropatt", {"relative", {{"dropatt", 0.3}}}},
      {"pre_norm", {"relative", {{"pre_norm", true}}}},
      {"tie_weights", {"relative", {{"tie_weights", false}}}},
      {"clamp_len", {"relative", {{"clamp_len", 4}}}},
      {"max_rel_dist", {"relative_learned", {{"max_rel_dist", 32}}}},
      {"init_std", {"relative", {{"init_std", 0.05}}}},
      {"adaptive", {"relative", {{"adaptive", {{"cutoffs", {20}}, {"div_val", 2}}}}}},
      {"rope_base", {"rope", {{"rope_base", 500}}}},
      {"t5_buckets", {"t5", {{"t5_buckets", 16}}}},
      {"t5_max_distance", {"t5", {{"t5_max_distance", 64}}}},
      {"fire_threshold", {"fire", {{"fire_threshold", 64}}}},
      {"max_len", {"learned_absolute", {{"max_len", 64}}}},
  };
  std::vector<std::string> keys;
  for (const auto& field : config_keys::model_fields()) keys.push_back(field.name);
  for (const auto& traits : encoding_registry())
    for (const auto& option : traits.options) keys.push_back(option.key);
  for (const auto& key : keys) EXPECT_TRUE(changes.count(key)) << key << " has no case here";
  for (const auto& [key, change] : changes) {
    SCOPED_TRACE(key);
    nlohmann::json a = base;
    a["model"]["pos_encoding"] = change.first;
    const bool memory = encoding_traits(parse_pos_encoding(change.first, "")).takes_memory;
    if (!memory) a["train"]["mem_len"] = 0;
    nlohmann::json b = a;
    b["model"].merge_patch(change.second);
    const Config ca = config_from_json(a, "a"), cb = config_from_json(b, "b");
    const bool reshaped = parameter_shapes(ca) != parameter_shapes(cb);
    EXPECT_EQ(!shape_differences(ca, cb).empty(), reshaped)
        << "shape differences: " << nlohmann::json(shape_differences(ca, cb)).dump();
  }
}

}  // namespace
}  // namespace txl
