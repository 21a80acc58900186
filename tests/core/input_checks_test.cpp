// Bad input that used to slip through (issue 14), through the real executable. One table:
// each row is a command line, the exit code and a word its message must contain, and the
// check that it wrote nothing: no run directory where none was, an existing one unchanged
// (file for file, byte for byte), no --json output.
//  - --stride 0, --mem-len -1, --clamp-len -1, sample's --context 0: the defaults are asked for by
//  leaving a flag
//    out, so these are refused instead of silently read as the default;
//  - a negative --threads in every subcommand that has one, and train.threads;
//  - train.tgt_len longer than a training stream, and a model too big for the machine:
//    refused before the run directory is made (or --force clears the old run);
//  - a duplicate key in a config file or in a run's vocab.json;
//  - an evaluation or a training run that needs more memory than is available.
#include <gtest/gtest.h>

#include <map>

#include "cli_harness.h"

namespace txl {
namespace {

namespace fs = std::filesystem;
using testing::read_text;
using testing::run_txl;

// Every file under `dir` (relative path -> contents); empty when `dir` does not exist.
std::map<std::string, std::string> snapshot(const std::string& dir) {
  std::map<std::string, std::string> files;
  if (!fs::exists(dir)) return files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    const std::string name = fs::relative(entry.path(), dir).string();
    files[name] = entry.is_regular_file() ? read_text(entry.path().string()) : "<dir>";
  }
  return files;
}

struct Row {
  std::string name;
  std::vector<std::string> args;
  int code;
  std::string word;              // part of the error message
  std::vector<std::string> env;  // NAME=value for the child
};

TEST(InputChecks, EachBadInputExits2NamingItAndWritesNothing) {
  const std::string dir = testing::scratch_dir("input_checks");
  const std::string corpus =
      testing::write_corpus(dir + "/corpus", testing::tiny_english(300),
                            testing::tiny_english(40, 1), testing::tiny_english(40, 2));
  const std::string run = dir + "/run";
  ASSERT_TRUE(testing::train_tiny_run(corpus, run, "relative"));
  const std::string config = run + ".config.json";  // what train_tiny_run trained with
  const std::string config_text = read_text(config);

  // A config with "data" twice (the second pointing elsewhere) and one with model.n_layer
  // twice; a run whose vocab.json says "tokenizer" twice.
  const std::string dup_section = dir + "/dup_section.json";
  testing::write_text(dup_section,
                      "{\"data\": {\"dir\": \"/elsewhere\"}, " + config_text.substr(1));
  const std::string dup_key = dir + "/dup_key.json";
  std::string text = config_text;
  text.replace(text.find("\"n_layer\": 1,"), 13, "\"n_layer\": 1, \"n_layer\": 2,");
  testing::write_text(dup_key, text);
  const std::string dup_vocab_run = dir + "/dup_vocab_run";
  fs::copy(run, dup_vocab_run, fs::copy_options::recursive);
  std::string vocab = read_text(dup_vocab_run + "/vocab.json");
  vocab.insert(vocab.rfind('}'), ",\"tokenizer\":\"word\"");
  testing::write_text(dup_vocab_run + "/vocab.json", vocab);

  // Train rows go to a new directory, an existing empty one and (with --force) the trained
  // run; none of them may change.
  const std::string fresh = dir + "/fresh";
  const std::string empty = dir + "/empty";
  fs::create_directories(empty);
  const std::vector<std::string> train = {"train", "--config", config, "--run-dir", fresh};
  const std::vector<std::string> train_empty = {"train", "--config", config, "--run-dir", empty};
  const std::vector<std::string> train_force = {"train",     "--config", config,
                                                "--run-dir", run,        "--force"};
  const std::string json = dir + "/out.json";
  auto with = [](std::vector<std::string> base, const std::vector<std::string>& extra) {
    base.insert(base.end(), extra.begin(), extra.end());
    return base;
  };
  const std::vector<std::string> eval = {"eval", "--run", run, "--lengths", "16", "--json", json};
  const std::vector<std::string> compare = {"compare", run, run, "--lengths", "16", "--json", json};

  // clang-format off
  const std::vector<Row> rows = {
      // eval and compare: flags whose 0 / negative value used to mean the default.
      {"stride_0", with(eval, {"--method", "sliding", "--stride", "0"}), 2, "--stride 0 is not valid"},
      {"stride_negative", with(compare, {"--method", "sliding", "--stride", "-4"}), 2, "--stride -4"},
      {"mem_len_negative", with(eval, {"--method", "memory", "--mem-len", "-1"}), 2,
       "--mem-len -1 is not valid"},
      {"clamp_len_negative", with(eval, {"--clamp-len", "-1"}), 2, "--clamp-len -1"},
      {"context_0", {"sample", "--run", run, "--tokens", "4", "--context", "0"}, 2,
       "--context 0 is not valid"},
      // A negative thread count, everywhere there is one.
      {"eval_threads", with(eval, {"--threads", "-3"}), 2, "--threads -3 is not valid"},
      {"compare_threads", with(compare, {"--threads", "-3"}), 2, "--threads -3 is not valid"},
      {"sample_threads", {"sample", "--run", run, "--tokens", "4", "--threads", "-3"}, 2,
       "--threads -3 is not valid"},
      {"info_threads", {"info", "--no-bench", "--threads", "-3"}, 2, "--threads -3 is not valid"},
      {"bench_threads", {"bench", "--config", config, "--threads", "-3", "--json", json}, 2,
       "--threads -3 is not valid"},
      {"bench_threads_minus_one", {"bench", "--config", config, "--threads", "-1", "--json", json},
       2, "--threads -1 is not valid"},
      {"train_threads", with(train, {"--set", "train.threads=-3"}), 2, "train.threads (-3)"},
      // A segment longer than a training stream: the largest allowed is named.
      {"tgt_len_too_long", with(train, {"--set", "train.tgt_len=100000000"}), 2,
       "train.tgt_len can be at most"},
      {"tgt_len_into_empty_dir", with(train_empty, {"--set", "train.tgt_len=100000000"}), 2,
       "train.tgt_len (100000000)"},
      {"tgt_len_with_force", with(train_force, {"--set", "train.tgt_len=100000000"}), 2,
       "train.tgt_len (100000000)"},
      // A model that cannot fit in memory: 1e8 layers of the tiny model are ~2.4e11 parameters,
      // ~4 TB with gradients and AdamW state, on any machine.
      {"model_too_big", with(train, {"--set", "model.n_layer=100000000"}), 2, "GB of memory is available"},
      {"model_too_big_with_force", with(train_force, {"--set", "model.n_layer=100000000"}), 2,
       "GB of memory is available"},
      // Duplicate keys.
      {"duplicate_section", {"train", "--config", dup_section, "--run-dir", fresh}, 2,
       "duplicate key \"data\""},
      {"duplicate_key", {"train", "--config", dup_key, "--run-dir", fresh}, 2,
       "duplicate key \"model.n_layer\""},
      {"duplicate_vocab_key", {"eval", "--run", dup_vocab_run, "--lengths", "16", "--json", json},
       2, "vocab.json: duplicate key \"tokenizer\""},
      // More memory than the machine gives: refused from the estimate
      // before anything is allocated, with the estimate (a cap of 1 kB fits nothing); a cap that is
      // not a number too.
      {"eval_memory", eval, 2, "needs about", {"TXL_MEMORY_LIMIT_MB=0.001"}},
      {"compare_memory", compare, 2, "of attention scores", {"TXL_MEMORY_LIMIT_MB=0.001"}},
      {"sliding_memory", with(eval, {"--method", "sliding", "--stride", "1"}), 2,
       "evaluating at length 16", {"TXL_MEMORY_LIMIT_MB=0.001"}},
      {"train_memory", train, 2, "GB of memory is available", {"TXL_MEMORY_LIMIT_MB=0.001"}},
      {"memory_cap_not_a_number", eval, 2, "TXL_MEMORY_LIMIT_MB=\"abc\" is not valid",
       {"TXL_MEMORY_LIMIT_MB=abc"}},
  };
  // clang-format on

  const std::vector<std::string> watched = {run, dup_vocab_run, empty, fresh};
  for (const auto& row : rows) {
    std::map<std::string, std::map<std::string, std::string>> before;
    for (const auto& d : watched) before[d] = snapshot(d);
    const auto r = run_txl(row.args, row.env);
    EXPECT_EQ(r.code, row.code) << row.name << ": " << r.err;
    EXPECT_NE(r.err.find(row.word), std::string::npos)
        << row.name << ": expected \"" << row.word << "\" in: " << r.err;
    EXPECT_EQ(r.err.find("terminate called"), std::string::npos) << row.name << ": " << r.err;
    for (const auto& d : watched) EXPECT_EQ(snapshot(d), before[d]) << row.name << ": " << d;
    EXPECT_FALSE(fs::exists(fresh)) << row.name << ": a run directory was created";
    EXPECT_TRUE(fs::is_directory(empty)) << row.name << ": the empty run directory was removed";
    EXPECT_FALSE(fs::exists(json)) << row.name << ": --json was written";
  }
  testing::cleanup_scratch();
}

// The limits themselves are accepted: a segment exactly as long as a stream allows, and 0
// threads (all cores); one token more is refused.
TEST(InputChecks, TheLongestSegmentAStreamHoldsAndZeroThreadsAreAccepted) {
  const std::string dir = testing::scratch_dir("input_limits");
  // train_tiny_run's 4 streams of 60 characters each: train.tgt_len may be 59.
  std::string train_text(240, 'a');
  for (size_t i = 0; i < train_text.size(); i += 3) train_text[i] = 'b';
  const std::string corpus =
      testing::write_corpus(dir + "/corpus", train_text, "abba\nbaab\n", "abab\nbaba\n");
  const std::string run = dir + "/run";
  EXPECT_TRUE(testing::train_tiny_run(corpus, run, "relative", "char", 1,
                                      {"--set", "train.tgt_len=59", "--set", "train.threads=0"}));
  const auto longer = run_txl({"train", "--config", run + ".config.json", "--run-dir",
                               dir + "/longer", "--set", "train.tgt_len=60"});
  EXPECT_EQ(longer.code, 2) << longer.err;
  EXPECT_NE(longer.err.find("240 tokens / train.batch_size 4 = 60 tokens per stream, so "
                            "train.tgt_len can be at most 59"),
            std::string::npos)
      << longer.err;
  EXPECT_FALSE(fs::exists(dir + "/longer"));
  const auto info = run_txl({"info", "--no-bench", "--threads", "0"});
  EXPECT_EQ(info.code, 0) << info.err;
  testing::cleanup_scratch();
}

}  // namespace
}  // namespace txl
