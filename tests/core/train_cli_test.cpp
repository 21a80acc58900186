// `txl train` on bad input and faults, through the real executable:
//  - a table of malformed configs and corpora: each exits 2, names the problem and creates
//    no run directory;
//  - an existing run directory is never overwritten without --resume or --force;
//  - resume refuses changed configs, vocabularies, corpora and damaged checkpoints;
//  - an injected NaN stops with a checkpoint of the last finite state (resumable, and the
//    resumed run equals the uninterrupted one), or is skipped and counted.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "cli_harness.h"
#include "txl/run/checkpoint.h"

namespace txl {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::fresh_dir;
using testing::read_text;
using testing::run_txl;
using testing::write_text;

struct BadInput {
  std::string name;
  json patch = json::object();  // merged into a valid config
  std::string config_text;      // when set: the whole config file instead
  std::vector<std::string> extra_args;
  void (*corpus)(const std::string& dir) = nullptr;  // damage done to the corpus folder
  std::string expected;                              // part of the message
};

// The rows of the table, by what they change: a key of a valid config, the whole config
// file, a --set argument, or the corpus folder.
BadInput cfg(std::string name, json patch, std::string expected) {
  return {std::move(name), std::move(patch), "", {}, nullptr, std::move(expected)};
}
BadInput file(std::string name, std::string text, std::string expected) {
  return {std::move(name), json::object(), std::move(text), {}, nullptr, std::move(expected)};
}
BadInput arg(std::string name, std::string assignment, std::string expected) {
  BadInput b = cfg(std::move(name), json::object(), std::move(expected));
  b.extra_args = {"--set", std::move(assignment)};
  return b;
}
BadInput data(std::string name, void (*damage)(const std::string&), std::string expected) {
  BadInput b = cfg(std::move(name), json::object(), std::move(expected));
  b.corpus = damage;
  return b;
}

std::vector<BadInput> bad_inputs() {
  using D = const std::string&;  // the corpus folder
  // One row per case.
  // clang-format off
  return {
      // Unknown keys at every level, with the valid ones listed.
      cfg("unknown_section", {{"modle", json::object()}}, "unknown key \"modle\""),
      cfg("unknown_data_key", {{"data", {{"dirs", "x"}}}}, "unknown key \"data.dirs\""),
      cfg("unknown_model_key", {{"model", {{"layers", 2}}}}, "unknown key \"model.layers\""),
      cfg("unknown_train_key", {{"train", {{"learning_rate", 0.1}}}},
          "unknown key \"train.learning_rate\""),
      cfg("unknown_eval_key", {{"eval", {{"length", 8}}}}, "unknown key \"eval.length\""),
      arg("unknown_set_key", "model.nlayer=2", "unknown key \"model.nlayer\""),
      // Wrong types.
      cfg("string_for_int", {{"model", {{"n_layer", "2"}}}}, "model.n_layer must be an integer"),
      cfg("string_for_number", {{"train", {{"lr", "fast"}}}}, "train.lr must be a number"),
      cfg("section_not_object", {{"model", json::array()}}, "model must be an object"),
      cfg("bad_enum", {{"model", {{"pos_encoding", "rotary"}}}},
          "model.pos_encoding: \"rotary\" is not valid"),
      arg("set_wrong_type", "model.n_layer=two", "model.n_layer must be an integer"),
      // Zero and negative sizes, lengths not positive.
      cfg("zero_layers", {{"model", {{"n_layer", 0}}}}, "model.n_layer (0) must be >= 1"),
      cfg("negative_d_inner", {{"model", {{"d_inner", -4}}}}, "model.d_inner (-4) must be >= 1"),
      cfg("zero_batch", {{"train", {{"batch_size", 0}}}}, "train.batch_size (0) must be >= 1"),
      cfg("zero_tgt_len", {{"train", {{"tgt_len", 0}}}}, "train.tgt_len (0) must be >= 1"),
      cfg("negative_mem_len", {{"train", {{"mem_len", -1}}}}, "train.mem_len (-1) must be >= 0"),
      cfg("dropout_one", {{"model", {{"dropout", 1.0}}}}, "model.dropout (1.0) must be in [0, 1)"),
      cfg("empty_lengths", {{"eval", {{"lengths", json::array()}}}}, "eval.lengths is empty"),
      cfg("zero_length", {{"eval", {{"lengths", {8, 0}}}}}, "eval.lengths[1] (0) must be >= 1"),
      // Cross-field rules.
      cfg("heads_do_not_split", {{"model", {{"d_model", 20}}}},
          "model.d_model (20) must equal model.n_head * model.d_head (2 * 8 = 16)"),
      cfg("absolute_with_memory", {{"model", {{"pos_encoding", "absolute"}}}},
          "requires train.mem_len = 0"),
      cfg("same_length_without_memory", {{"train", {{"same_length", true}, {"mem_len", 0}}}},
          "train.same_length makes every query attend over the last train.mem_len keys"),
      arg("same_length_not_a_bool", "train.same_length=1", "train.same_length must be true or false"),
      // The file itself.
      file("invalid_json", "{\"model\": {\"n_layer\": 2,}}", "invalid JSON at byte"),
      file("no_data_dir", "{\"model\": {}}", "data.dir is required"),
      // The corpus.
      cfg("corpus_missing", {{"data", {{"dir", "/nonexistent/txl/corpus"}}}},
          "/nonexistent/txl/corpus does not exist"),
      data("missing_split", [](D d) { fs::remove(d + "/valid.txt"); }, "valid.txt: missing"),
      data("empty_split", [](D d) { write_text(d + "/test.txt", ""); }, "the test split is empty"),
      data("whitespace_split", [](D d) { write_text(d + "/valid.txt", " \n\t\r\n  \n"); },
           "holds only whitespace"),
      data("invalid_utf8", [](D d) { write_text(d + "/train.txt", "good text \xC3\x28 then"); },
           "invalid UTF-8 at byte offset 10"),
      data("split_is_directory",
           [](D d) { fs::remove(d + "/train.txt"); fs::create_directories(d + "/train.txt"); },
           "train.txt: is a directory"),
      // Found once the data is loaded, still before the run directory is made.
      cfg("too_few_tokens_for_batch", {{"train", {{"batch_size", 1000}}}},
          "too few for train.batch_size = 1000"),
  };
  // clang-format on
}

TEST(BadInput, EachMalformedConfigOrCorpusExits2NamingTheProblemAndCreatesNoRunDirectory) {
  const std::string root = fresh_dir("bad_input");
  const auto cases = bad_inputs();
  // Started four at a time: most of each run is loading LibTorch.
  constexpr size_t kParallel = 4;
  for (size_t first = 0; first < cases.size(); first += kParallel) {
    std::vector<std::pair<pid_t, size_t>> running;
    for (size_t i = first; i < std::min(cases.size(), first + kParallel); ++i) {
      const BadInput& c = cases[i];
      const std::string dir = root + "/" + c.name;
      const std::string corpus = testing::write_tiny_corpus(dir + "/corpus");
      if (c.corpus) c.corpus(corpus);
      json config = testing::tiny_config(corpus);
      config.merge_patch(c.patch);
      write_text(dir + "/config.json", c.config_text.empty() ? config.dump() : c.config_text);
      std::vector<std::string> args = {"train", "--config", dir + "/config.json", "--run-dir",
                                       dir + "/run"};
      args.insert(args.end(), c.extra_args.begin(), c.extra_args.end());
      running.emplace_back(testing::spawn_txl(args, dir + "/output.txt"), i);
    }
    for (const auto& [pid, i] : running) {
      const BadInput& c = cases[i];
      const std::string dir = root + "/" + c.name;
      const int code = testing::wait_txl(pid);
      const std::string output = read_text(dir + "/output.txt");
      EXPECT_EQ(code, 2) << c.name << ": " << output;
      EXPECT_NE(output.find(c.expected), std::string::npos)
          << c.name << ": expected \"" << c.expected << "\" in: " << output;
      EXPECT_EQ(output.find("terminate called"), std::string::npos) << c.name << ": " << output;
      EXPECT_FALSE(fs::exists(dir + "/run")) << c.name << ": a run directory was created";
    }
  }
}

TEST(BadInput, ConfigPathThatIsMissingOrADirectoryExits2) {
  const std::string root = fresh_dir("config_path");
  auto missing = run_txl({"train", "--config", root + "/nope.json", "--run-dir", root + "/run"});
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.output.find(root + "/nope.json"), std::string::npos) << missing.output;
  auto folder = run_txl({"train", "--config", root, "--run-dir", root + "/run"});
  EXPECT_EQ(folder.code, 2);
  EXPECT_NE(folder.output.find("is a directory"), std::string::npos) << folder.output;
  EXPECT_FALSE(fs::exists(root + "/run"));
}

struct RunFixture {
  std::string root, config_path, run;
};

RunFixture make_run(const std::string& name, const json& changes = json::object()) {
  RunFixture r;
  r.root = fresh_dir(name);
  json config = testing::tiny_config(testing::write_tiny_corpus(r.root + "/corpus"));
  config.merge_patch(changes);
  r.config_path = testing::write_config(r.root + "/config.json", config);
  r.run = r.root + "/run";
  return r;
}

TEST(RunDirectory, AnExistingRunIsNeverOverwrittenWithoutForce) {
  const RunFixture r = make_run("overwrite", {{"train", {{"max_steps", 6}}}});
  ASSERT_EQ(run_txl({"train", "--config", r.config_path, "--run-dir", r.run}).code, 0);
  const std::string checkpoint = read_text(r.run + "/checkpoint.pt");
  const std::string metrics = read_text(r.run + "/metrics.jsonl");

  const auto again = run_txl({"train", "--config", r.config_path, "--run-dir", r.run});
  EXPECT_EQ(again.code, 2);
  EXPECT_NE(again.output.find("already holds a run; use --resume " + r.run), std::string::npos)
      << again.output;
  EXPECT_EQ(read_text(r.run + "/checkpoint.pt"), checkpoint);
  EXPECT_EQ(read_text(r.run + "/metrics.jsonl"), metrics);

  const auto both = run_txl({"train", "--resume", r.run, "--force"});
  EXPECT_EQ(both.code, 2) << both.output;

  // --force starts over: the old run's files are replaced, not appended to.
  write_text(r.run + "/notes.txt", "mine");
  const auto forced = run_txl({"train", "--config", r.config_path, "--run-dir", r.run, "--force",
                               "--set", "train.max_steps=4"});
  ASSERT_EQ(forced.code, 0) << forced.output;
  EXPECT_EQ(testing::read_losses(r.run).size(), 4u);
  EXPECT_EQ(read_checkpoint_state(r.run + "/checkpoint.pt").step, 4);
  EXPECT_EQ(read_text(r.run + "/notes.txt"), "mine");
}

TEST(RunDirectory, ANonEmptyFolderWithoutARunIsRefusedToo) {
  const RunFixture r = make_run("not_a_run");
  fs::create_directories(r.run);
  write_text(r.run + "/important.txt", "keep me");
  const auto refused = run_txl({"train", "--config", r.config_path, "--run-dir", r.run});
  EXPECT_EQ(refused.code, 2);
  EXPECT_NE(refused.output.find("is not empty"), std::string::npos) << refused.output;
  EXPECT_EQ(read_text(r.run + "/important.txt"), "keep me");
  EXPECT_EQ(fs::directory_iterator(r.run)->path().filename(), "important.txt");
}

TEST(Resume, RefusesChangesThatWouldMakeItAnotherRun) {
  const RunFixture r = make_run("resume_refusals", {{"train", {{"max_steps", 4}}}});
  ASSERT_EQ(run_txl({"train", "--config", r.config_path, "--run-dir", r.run}).code, 0);

  auto set_model = run_txl({"train", "--resume", r.run, "--set", "model.d_inner=48"});
  EXPECT_EQ(set_model.code, 2);
  EXPECT_NE(set_model.output.find("model.d_inner cannot change on --resume; only train.max_steps"),
            std::string::npos)
      << set_model.output;

  json other = json::parse(read_text(r.config_path));
  other["model"]["d_inner"] = 48;
  other["train"]["max_steps"] = 8;
  const std::string other_path = testing::write_config(r.root + "/other.json", other);
  auto with_config = run_txl({"train", "--resume", r.run, "--config", other_path});
  EXPECT_EQ(with_config.code, 2);
  EXPECT_NE(with_config.output.find("model.d_inner: 32 vs 48"), std::string::npos)
      << with_config.output;

  auto missing = run_txl({"train", "--resume", r.root + "/nothing"});
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.output.find("no such run directory"), std::string::npos) << missing.output;

  // config.json edited behind the checkpoint's back.
  const std::string config_text = read_text(r.run + "/config.json");
  json edited = json::parse(config_text);
  edited["train"]["lr"] = 0.5;
  edited["train"]["max_steps"] = 8;
  write_text(r.run + "/config.json", edited.dump());
  auto edited_run = run_txl({"train", "--resume", r.run});
  EXPECT_EQ(edited_run.code, 2);
  EXPECT_NE(edited_run.output.find("different configuration"), std::string::npos)
      << edited_run.output;
  EXPECT_NE(edited_run.output.find("train.lr: 0.003 vs 0.5"), std::string::npos)
      << edited_run.output;
  write_text(r.run + "/config.json", config_text);

  // The training text changed but gives the same vocabulary: the stream position would
  // point into other data.
  const std::string train_text = read_text(r.root + "/corpus/train.txt");
  write_text(r.root + "/corpus/train.txt", train_text + train_text);
  auto changed = run_txl({"train", "--resume", r.run, "--set", "train.max_steps=8"});
  EXPECT_EQ(changed.code, 2);
  EXPECT_NE(changed.output.find("the training split changed"), std::string::npos) << changed.output;
  write_text(r.root + "/corpus/train.txt", train_text);

  // Damaged checkpoint.
  std::string bytes = read_text(r.run + "/checkpoint.pt");
  bytes[bytes.size() / 2] ^= 0x01;
  write_text(r.run + "/checkpoint.pt", bytes);
  auto damaged = run_txl({"train", "--resume", r.run, "--set", "train.max_steps=8"});
  EXPECT_EQ(damaged.code, 2);
  EXPECT_NE(damaged.output.find(r.run + "/checkpoint.pt: corrupted"), std::string::npos)
      << damaged.output;
  EXPECT_EQ(damaged.output.find("terminate called"), std::string::npos) << damaged.output;
}

TEST(NonFinite, InjectedNanStopsNamingTheStepAndTheResumedRunEqualsTheUninterruptedOne) {
  const RunFixture r = make_run("nan_stop", {{"train", {{"max_steps", 12}, {"eval_interval", 5}}}});
  const auto reference =
      run_txl({"train", "--config", r.config_path, "--run-dir", r.root + "/ref"});
  ASSERT_EQ(reference.code, 0) << reference.output;

  const auto stopped = run_txl({"train", "--config", r.config_path, "--run-dir", r.run},
                               {"TXL_INJECT_NAN_AT_STEP=7"});
  EXPECT_EQ(stopped.code, 1);
  EXPECT_NE(stopped.output.find("step 7: loss nan"), std::string::npos) << stopped.output;
  EXPECT_NE(stopped.output.find("holds step 6, the last finite state"), std::string::npos)
      << stopped.output;
  EXPECT_NE(stopped.output.find("--set train.skip_nonfinite=true"), std::string::npos)
      << stopped.output;
  EXPECT_EQ(read_checkpoint_state(r.run + "/checkpoint.pt").step, 6);

  const auto resumed = run_txl({"train", "--resume", r.run});
  ASSERT_EQ(resumed.code, 0) << resumed.output;
  const auto expected = testing::read_losses(r.root + "/ref");
  const auto actual = testing::read_losses(r.run);
  ASSERT_EQ(actual.size(), 12u);
  for (const auto& [step, loss] : expected) EXPECT_EQ(actual.at(step), loss) << "step " << step;
}

TEST(NonFinite, SkipNonfiniteSkipsAndCountsTheSteps) {
  const RunFixture r =
      make_run("nan_skip", {{"train", {{"max_steps", 10}, {"skip_nonfinite", true}}}});
  const auto result = run_txl({"train", "--config", r.config_path, "--run-dir", r.run},
                              {"TXL_INJECT_NAN_AT_STEP=3,4"});
  ASSERT_EQ(result.code, 0) << result.output;
  EXPECT_NE(result.output.find(
                "step      3: loss nan / gradient norm nan is not finite; skipped (1 so far)"),
            std::string::npos)
      << result.output;
  EXPECT_NE(result.output.find("2 non-finite steps skipped"), std::string::npos) << result.output;
  const auto state = read_checkpoint_state(r.run + "/checkpoint.pt");
  EXPECT_EQ(state.step, 10);
  EXPECT_EQ(state.skipped_steps, 2);
  int flagged = 0;
  for (const auto& j : testing::read_metrics(r.run)) flagged += j.value("nonfinite", false);
  EXPECT_EQ(flagged, 2);
  for (const auto& [step, loss] : testing::read_losses(r.run)) {
    EXPECT_EQ(std::isfinite(loss), step != 3 && step != 4) << "step " << step;
  }
}

TEST(NonFinite, PersistentNonFiniteStepsStopEvenWhenSkipping) {
  const RunFixture r =
      make_run("nan_persistent", {{"train", {{"max_steps", 30}, {"skip_nonfinite", true}}}});
  std::string steps;
  for (int s = 2; s <= 30; ++s) steps += (s > 2 ? "," : "") + std::to_string(s);
  const auto result = run_txl({"train", "--config", r.config_path, "--run-dir", r.run},
                              {"TXL_INJECT_NAN_AT_STEP=" + steps});
  EXPECT_EQ(result.code, 1) << result.output;
  EXPECT_NE(result.output.find("20 consecutive non-finite steps were skipped, giving up"),
            std::string::npos)
      << result.output;
  EXPECT_EQ(read_checkpoint_state(r.run + "/checkpoint.pt").step, 21);
}

}  // namespace
}  // namespace txl
