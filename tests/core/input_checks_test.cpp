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
#include <sys/stat.h>

#include <map>
#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "tiny_runs.h"

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
  // A private copy of the shared relative run: every row proves it unchanged, and two train
  // over it with --force.
  const std::string run = testing::copy_run(testing::tiny_run("relative"), dir + "/run");
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
  const std::string twin = dir + "/twin";  // compare needs two runs, not one run twice
  fs::copy(run, twin, fs::copy_options::recursive);
  // A config whose training length is not the checkpoint's (issue 44).
  const std::string relength = dir + "/relength";
  fs::copy(run, relength, fs::copy_options::recursive);
  std::string relength_config = read_text(relength + "/config.json");
  relength_config.replace(relength_config.find("\"tgt_len\": 16"), 13, "\"tgt_len\": 32");
  testing::write_text(relength + "/config.json", relength_config);
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
  const std::vector<std::string> compare = {"compare", run,      twin, "--lengths",
                                            "16",      "--json", json};

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
      {"model_too_big", with(train, {"--set", "model.n_layer=100000000"}), 2, "of memory is available"},
      {"model_too_big_with_force", with(train_force, {"--set", "model.n_layer=100000000"}), 2,
       "of memory is available"},
      // Duplicate keys.
      {"duplicate_section", {"train", "--config", dup_section, "--run-dir", fresh}, 2,
       "duplicate key \"data\""},
      {"duplicate_key", {"train", "--config", dup_key, "--run-dir", fresh}, 2,
       "duplicate key \"model.n_layer\""},
      {"checkpoint_of_another_length", {"eval", "--run", relength, "--lengths", "16"}, 2,
       "was trained with train.tgt_len 16 but"},
      {"duplicate_vocab_key", {"eval", "--run", dup_vocab_run, "--lengths", "16", "--json", json},
       2, "vocab.json: duplicate key \"tokenizer\""},
      // More memory than the machine gives: refused from the estimate
      // before anything is allocated, with the estimate (a cap of 1 kB fits nothing); a cap that is
      // not a number too.
      {"eval_memory", eval, 2, "needs about", {"TXL_MEMORY_LIMIT_MB=0.001"}},
      {"compare_memory", compare, 2, "of attention scores", {"TXL_MEMORY_LIMIT_MB=0.001"}},
      {"sliding_memory", with(eval, {"--method", "sliding", "--stride", "1"}), 2,
       "evaluating at length 16", {"TXL_MEMORY_LIMIT_MB=0.001"}},
      {"train_memory", train, 2, "of memory is available", {"TXL_MEMORY_LIMIT_MB=0.001"}},
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

// A table of rows, each run against `watched` folders that must not change, no `fresh` run
// directory and no --json output. Returns each row's stderr by name.
std::map<std::string, std::string> expect_refusals(const std::vector<Row>& rows,
                                                   const std::vector<std::string>& watched,
                                                   const std::string& fresh,
                                                   const std::string& json) {
  std::map<std::string, std::string> errors;
  for (const auto& row : rows) {
    std::map<std::string, std::map<std::string, std::string>> before;
    for (const auto& d : watched) before[d] = snapshot(d);
    const auto r = run_txl(row.args, row.env);
    EXPECT_EQ(r.code, row.code) << row.name << ": " << r.err;
    EXPECT_NE(r.err.find(row.word), std::string::npos)
        << row.name << ": expected \"" << row.word << "\" in: " << r.err;
    for (const auto& d : watched) EXPECT_EQ(snapshot(d), before[d]) << row.name << ": " << d;
    EXPECT_FALSE(fs::exists(fresh)) << row.name << ": a run directory was created";
    EXPECT_FALSE(fs::exists(json)) << row.name << ": --json was written";
    errors[row.name] = r.err;
  }
  return errors;
}

// Issue 27: evaluation and sampling flags that would be ignored, read as a default, wrap or
// run out of memory; aids and run directories named for what they are.
TEST(InputChecks, FlagsThatWouldBeIgnoredDefaultedOrWrappedAreRefused) {
  const std::string dir = testing::scratch_dir("input_checks_flags");
  // Private copies of the shared runs: every row proves them unchanged.
  const std::string run = testing::copy_run(testing::tiny_run("relative"), dir + "/run");
  const std::string absolute = testing::copy_run(testing::tiny_run("absolute"), dir + "/absolute");
  const std::string config = run + ".config.json", json = dir + "/out.json";
  const std::vector<std::string> eval = {"eval", "--run", run, "--json", json};
  const std::vector<std::string> compare = {"compare", run, absolute, "--json", json};
  const std::vector<std::string> sample = {"sample", "--run", run};
  const auto with = [](std::vector<std::string> base, const std::vector<std::string>& extra) {
    base.insert(base.end(), extra.begin(), extra.end());
    return base;
  };
  // clang-format off
  const std::vector<Row> rows = {
      // A flag of one method (or of an aid) given where it is not read.
      {"stride_nonoverlap", with(eval, {"--stride", "4"}), 2,
       "--stride applies to --method sliding only, but --method is nonoverlap"},
      {"mem_len_sliding", with(eval, {"--method", "sliding", "--mem-len", "4"}), 2,
       "--mem-len applies to --method memory only, but --method is sliding"},
      {"mem_len_nonoverlap", with(compare, {"--mem-len", "4"}), 2, "--mem-len applies"},
      {"streams_nonoverlap", with(eval, {"--streams", "2"}), 2, "--streams applies"},
      {"aid_factor_alone", with(eval, {"--aid-factor", "2"}), 2,
       "--aid-factor 2 scales an extrapolation aid, but no --aid is given"},
      {"aid_factor_alone_compare", with(compare, {"--aid-factor", "2"}), 2, "no --aid is given"},
      {"clamp_len_absolute", {"eval", "--run", absolute, "--clamp-len", "4", "--json", json}, 2,
       "--clamp-len 4 caps the distances of relative"},
      // Lists: empty, repeated, a trailing comma; an empty value is not the default.
      {"lengths_empty", with(eval, {"--lengths", ""}), 2, "--lengths is given an empty value"},
      {"lengths_repeat", with(eval, {"--lengths", "32,32"}), 2, "32 is given twice"},
      {"lengths_trailing_comma", with(compare, {"--lengths", "32,"}), 2,
       "--lengths \"32,\": \"\" is not a positive integer"},
      {"split_empty", with(eval, {"--split", ""}), 2, "--split is given an empty value"},
      // An option's name taken as the value of the option before it.
      {"json_json", {"eval", "--run", run, "--lengths", "32", "--json", "--json"}, 2,
       "--json is given \"--json\", an option's name, as its value"},
      {"protocols_json_json", {"protocols", "--json", "--json"}, 2,
       "--json is given \"--json\""},
      // A whole number past int64 is refused as typed, not clamped to 9223372036854775807.
      {"sample_seed_overflow", with(sample, {"--seed", "99999999999999999999"}), 2,
       "--seed 99999999999999999999 is out of range; whole numbers run from"},
      {"threads_overflow", with(eval, {"--threads", "-99999999999999999999"}), 2,
       "--threads -99999999999999999999 is out of range"},
      {"bench_encodings_empty", {"bench", "--config", config, "--encodings", "", "--json", json},
       2, "--encodings is given an empty value"},
      {"bench_encodings_repeat",
       {"bench", "--config", config, "--encodings", "rope,alibi,rope", "--json", json}, 2,
       "rope is given twice"},
      // Numbers that would wrap or exhaust memory.
      {"sample_seed_negative", with(sample, {"--seed", "-1"}), 2, "--seed -1 is not valid"},
      {"sample_tokens_huge", with(sample, {"--tokens", "99999999999"}), 2,
       "--tokens 99999999999 is not valid; expected 1 to 10000000"},
      {"bench_long_window_huge",
       {"bench", "--config", config, "--long-length", "99999999999", "--json", json}, 2,
       "--long-length 99999999999 (relative): "},
      // Aids after '@' that are not one aid; a run directory that is a file.
      {"aid_unknown", {"compare", run + "@bogus", "--json", json}, 2,
       "\"bogus\" after '@' is not an extrapolation aid"},
      {"aid_empty", {"compare", run + "@", "--json", json}, 2, "\"\" after '@' is not"},
      {"aid_two", {"compare", run + "@pi@ntk", "--json", json}, 2, "\"pi@ntk\" after '@'"},
      {"run_is_a_file", {"eval", "--run", config, "--json", json}, 2,
       "run directory " + config + " is a regular file, expected a directory"},
  };
  // clang-format on
  expect_refusals(rows, {run, absolute}, dir + "/fresh", json);
  EXPECT_FALSE(fs::exists("--json")) << "a file named --json was written";
  testing::cleanup_scratch();
}

// Issue 27: configuration errors named for their cause, run files that are not files, and
// the resume hint that must not advise --force while best.pt is intact.
TEST(InputChecks, ConfigAndRunFileErrorsNameTheirCause) {
  const std::string dir = testing::scratch_dir("input_checks_causes");
  // A private copy of the shared relative run: every row proves it unchanged, one resumes it.
  const std::string run = testing::copy_run(testing::tiny_run("relative"), dir + "/run");
  const std::string config = run + ".config.json", json = dir + "/out.json";
  const std::string fresh = dir + "/fresh";
  // Damaged copies: best.pt a directory; checkpoint.pt a directory beside an intact best.pt;
  // checkpoint.pt missing beside an intact best.pt.
  const std::string bad_best = dir + "/bad_best", bad_last = dir + "/bad_last",
                    no_last = dir + "/no_last";
  for (const auto& d : {bad_best, bad_last, no_last}) fs::copy(run, d, fs::copy_options::recursive);
  ASSERT_TRUE(fs::is_regular_file(run + "/best.pt"));
  fs::remove(bad_best + "/best.pt");
  fs::create_directory(bad_best + "/best.pt");
  fs::remove(bad_last + "/checkpoint.pt");
  fs::create_directory(bad_last + "/checkpoint.pt");
  fs::remove(no_last + "/checkpoint.pt");
  const std::string fifo_config = dir + "/fifo.json";
  ASSERT_EQ(::mkfifo(fifo_config.c_str(), 0644), 0);
  const std::vector<std::string> train = {"train", "--config", config, "--run-dir", fresh};
  const auto with = [](std::vector<std::string> base, const std::vector<std::string>& extra) {
    base.insert(base.end(), extra.begin(), extra.end());
    return base;
  };
  // clang-format off
  const std::vector<Row> rows = {
      // Keys an encoding ignores, pairs that must agree, a seed that would wrap.
      {"clamp_len_rope", with(train, {"--set", "model.pos_encoding=rope", "--set", "model.clamp_len=8"}),
       2, "model.clamp_len (8) is read by pos_encoding relative, relative_learned, alibi, kerple, "
          "but model.pos_encoding is rope"},
      {"max_rel_dist_alibi", with(train, {"--set", "model.pos_encoding=alibi", "--set",
                                             "model.max_rel_dist=64"}),
       2, "model.max_rel_dist (64) is read by pos_encoding relative_learned"},
      {"t5_pair", with(train, {"--set", "model.pos_encoding=t5", "--set", "model.t5_max_distance=16"}),
       2, "--set model.t5_max_distance=16 (over " + config + "): model.t5_max_distance (16) must "
          "be greater than model.t5_buckets / 2 (32 / 2 = 16)"},
      {"learned_table_short", with(train, {"--set", "model.pos_encoding=learned_absolute", "--set",
                                           "train.mem_len=0", "--set", "model.max_len=8"}),
       2, "model.max_len (8) must be at least train.tgt_len (16)"},
      {"seed_negative", with(train, {"--set", "train.seed=-1"}), 2,
       "--set train.seed=-1 (over " + config + "): train.seed (-1) must be >= 0"},
      {"set_blamed", with(train, {"--set", "model.pos_encoding=rope", "--set", "model.rope_base=-1"}),
       2, "--set model.rope_base=-1 (over " + config + "): model.rope_base (-1)"},
      {"run_dir_empty", {"train", "--config", config, "--run-dir", ""}, 2,
       "--run-dir is given an empty value"},
      {"study_out_empty", {"study", "--config", config, "--out", ""}, 2,
       "--out is given an empty value"},
      {"config_fifo", {"train", "--config", fifo_config, "--run-dir", fresh}, 2,
       fifo_config + ": is a FIFO (named pipe), expected a JSON file"},
      {"resume_set_blamed", {"train", "--resume", run, "--set", "train.max_steps=0"}, 2,
       "--set train.max_steps=0 (over " + run + "/config.json): train.max_steps (0) must be >= 1"},
      // Run files that are not files are named as such.
      {"best_is_a_directory", {"eval", "--run", bad_best, "--lengths", "8", "--json", json}, 2,
       bad_best + "/best.pt: is a directory, expected a checkpoint file"},
      {"last_is_a_directory", {"sample", "--run", bad_last, "--checkpoint", "last", "--tokens", "2"},
       2, bad_last + "/checkpoint.pt: is a directory, expected a checkpoint file"},
      {"resume_last_directory", {"train", "--resume", bad_last}, 2,
       bad_last + "/checkpoint.pt is a directory, not a checkpoint file; its best.pt is intact"},
      {"resume_last_missing", {"train", "--resume", no_last}, 2,
       "no checkpoint.pt there to resume from; its best.pt is intact: evaluate it"},
      {"force_over_directory", {"train", "--config", config, "--run-dir", bad_last, "--force"}, 2,
       bad_last + "/checkpoint.pt is a directory, expected the run's checkpoint.pt file"},
  };
  // clang-format on
  const auto errors = expect_refusals(rows, {run, bad_best, bad_last, no_last}, fresh, json);
  for (const auto* name : {"resume_last_directory", "resume_last_missing"}) {
    EXPECT_EQ(errors.at(name).find("--force"), std::string::npos)
        << name << ": " << errors.at(name);
  }
  testing::cleanup_scratch();
}

// Issue 27: a refusal after the corpus was read (a segment longer than a stream, a model or
// an evaluation too big for memory) leaves the token cache as it was.
TEST(InputChecks, ARefusalLeavesTheTokenCacheAsItWas) {
  const std::string dir = testing::scratch_dir("input_checks_cache");
  // A private copy of the shared relative run: the last eval must find its eval cache empty.
  const std::string run = testing::copy_run(testing::tiny_run("relative"), dir + "/run");
  const std::string config = run + ".config.json";
  // Another corpus, never tokenized, so that every load below would add entries.
  const std::string other =
      testing::write_corpus(dir + "/other", testing::tiny_english(301),
                            testing::tiny_english(41, 1), testing::tiny_english(41, 2));
  const std::string cache = dir + "/cache";
  const std::vector<std::string> env = {"TXL_CACHE_DIR=" + cache};
  const auto refused = [&](const std::vector<std::string>& args,
                           const std::vector<std::string>& extra_env, const std::string& word) {
    std::vector<std::string> all = env;
    all.insert(all.end(), extra_env.begin(), extra_env.end());
    const auto r = run_txl(args, all);
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_NE(r.err.find(word), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(cache)) << "the cache changed on: " << r.err;
  };
  refused({"train", "--config", config, "--run-dir", dir + "/fresh", "--set", "data.dir=" + other,
           "--set", "train.tgt_len=100000"},
          {}, "train.tgt_len can be at most");
  refused({"train", "--config", config, "--run-dir", dir + "/fresh", "--set", "data.dir=" + other},
          {"TXL_MEMORY_LIMIT_MB=0.001"}, "of memory is available");
  refused({"eval", "--run", run, "--lengths", "16"}, {"TXL_MEMORY_LIMIT_MB=0.001"}, "needs about");
  const std::string twin = dir + "/twin";
  fs::copy(run, twin, fs::copy_options::recursive);
  refused({"compare", run, twin, "--lengths", "16"}, {"TXL_MEMORY_LIMIT_MB=0.001"},
          "of attention scores");
  // Accepted, the same commands fill it.
  const auto ok = run_txl({"eval", "--run", run, "--lengths", "16"}, env);
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_TRUE(fs::exists(cache + "/tokens")) << ok.err;
  testing::cleanup_scratch();
}

// Issue 27: a corpus split that is a FIFO hung txl train with no output, even with a writer.
// Now it is refused at once naming it (the test fails after 60 s instead of hanging).
TEST(InputChecks, AFifoCorpusSplitIsRefusedAtOnce) {
  const std::string dir = testing::scratch_dir("input_checks_fifo");
  // The shared relative run's config over this test's own corpus, whose splits it swaps for
  // FIFOs.
  const std::string corpus = testing::write_tiny_english_corpus(dir + "/corpus");
  auto run_config =
      nlohmann::json::parse(read_text(testing::tiny_run("relative") + ".config.json"));
  run_config["data"]["dir"] = corpus;
  const std::string config = testing::write_config(dir + "/config.json", run_config);
  for (const char* split : {"train.txt", "valid.txt"}) {
    const std::string path = corpus + "/" + split;
    const std::string saved = path + ".saved";
    fs::rename(path, saved);
    ASSERT_EQ(::mkfifo(path.c_str(), 0644), 0);
    const std::string out = dir + "/out.txt";
    const pid_t pid =
        testing::spawn_txl({"train", "--config", config, "--run-dir", dir + "/fresh"}, out);
    EXPECT_EQ(testing::wait_txl(pid, 60.0), 2);
    const std::string err = read_text(out);
    EXPECT_NE(err.find(path + ": is a FIFO (named pipe), expected a text file"), std::string::npos)
        << err;
    EXPECT_FALSE(fs::exists(dir + "/fresh"));
    fs::remove(path);
    fs::rename(saved, path);
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

// A switch set to anything but 0 or 1 stops txl before it does anything (an A/B comparison
// with TXL_FUSED_ATTENTION=off used to compare the fused pass with itself); a TXL_ name txl
// does not read is a warning.
TEST(InputChecks, ASwitchOtherThanZeroOrOneIsRefusedAndAnUnknownNameIsNamed) {
  const std::string dir = testing::scratch_dir("input_env");
  const std::string run = testing::tiny_run("relative");  // read only: the refusal trains nothing
  const auto refused =
      run_txl({"train", "--config", run + ".config.json", "--run-dir", dir + "/again"},
              {"TXL_FUSED_ATTENTION=off"});
  EXPECT_EQ(refused.code, 2) << refused.output;
  EXPECT_NE(refused.err.find("TXL_FUSED_ATTENTION=\"off\": expected 0 or 1"), std::string::npos)
      << refused.err;
  EXPECT_FALSE(fs::exists(dir + "/again"));
  const auto warned = run_txl({"info", "--no-bench"}, {"TXL_FUSED_ATENTION=0"});
  EXPECT_EQ(warned.code, 0) << warned.output;
  EXPECT_NE(warned.err.find("warning: TXL_FUSED_ATENTION is set, but txl reads no variable"),
            std::string::npos)
      << warned.err;
  testing::cleanup_scratch();
}

}  // namespace
}  // namespace txl
