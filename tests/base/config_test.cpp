// Configuration: defaults, round trip, every rejection a user can hit, --set overrides and
// reading files. Error tests check the message names the key path (and the bad value), since
// that is what a user relies on to fix the file.
#include "txl/config/config.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "txl/config/encodings.h"
#include "txl/util/error.h"
#include "txl/util/text.h"

namespace txl {
namespace {

using nlohmann::json;

// The what() of the InputError `f` throws; fails the test (and returns "") if it throws
// nothing or something else.
template <typename F>
std::string input_error_of(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected InputError, got another exception: " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected InputError, nothing was thrown";
  return "";
}

void expect_contains(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "missing \"" << part << "\" in: " << text;
}

// Every field by hand, so a field that config_to_json or config_from_json drops shows up here.
void expect_same_config(const Config& a, const Config& b) {
  EXPECT_EQ(a.data.dir, b.data.dir);
  EXPECT_EQ(a.data.tokenizer, b.data.tokenizer);
  EXPECT_EQ(a.data.min_freq, b.data.min_freq);
  EXPECT_EQ(a.data.max_vocab, b.data.max_vocab);
  EXPECT_EQ(a.model.pos_encoding, b.model.pos_encoding);
  EXPECT_EQ(a.model.n_layer, b.model.n_layer);
  EXPECT_EQ(a.model.d_model, b.model.d_model);
  EXPECT_EQ(a.model.n_head, b.model.n_head);
  EXPECT_EQ(a.model.d_head, b.model.d_head);
  EXPECT_EQ(a.model.d_inner, b.model.d_inner);
  EXPECT_EQ(a.model.dropout, b.model.dropout);
  EXPECT_EQ(a.model.dropatt, b.model.dropatt);
  EXPECT_EQ(a.model.pre_norm, b.model.pre_norm);
  EXPECT_EQ(a.model.tie_weights, b.model.tie_weights);
  EXPECT_EQ(a.model.clamp_len, b.model.clamp_len);
  EXPECT_EQ(a.model.max_rel_dist, b.model.max_rel_dist);
  EXPECT_EQ(a.model.init_std, b.model.init_std);
  EXPECT_TRUE(a.model.adaptive == b.model.adaptive);
  EXPECT_EQ(a.train.tgt_len, b.train.tgt_len);
  EXPECT_EQ(a.train.tgt_len_max, b.train.tgt_len_max);
  EXPECT_EQ(a.train.mem_len, b.train.mem_len);
  EXPECT_EQ(a.train.batch_size, b.train.batch_size);
  EXPECT_EQ(a.train.max_steps, b.train.max_steps);
  EXPECT_EQ(a.train.lr, b.train.lr);
  EXPECT_EQ(a.train.warmup_steps, b.train.warmup_steps);
  EXPECT_EQ(a.train.min_lr_ratio, b.train.min_lr_ratio);
  EXPECT_EQ(a.train.weight_decay, b.train.weight_decay);
  EXPECT_EQ(a.train.clip, b.train.clip);
  EXPECT_EQ(a.train.seed, b.train.seed);
  EXPECT_EQ(a.train.log_interval, b.train.log_interval);
  EXPECT_EQ(a.train.eval_interval, b.train.eval_interval);
  EXPECT_EQ(a.train.eval_max_tokens, b.train.eval_max_tokens);
  EXPECT_EQ(a.train.threads, b.train.threads);
  EXPECT_EQ(a.train.device, b.train.device);
  EXPECT_EQ(a.train.precision, b.train.precision);
  EXPECT_EQ(a.train.skip_nonfinite, b.train.skip_nonfinite);
  EXPECT_EQ(a.train.probes, b.train.probes);
  EXPECT_EQ(a.train.probe_interval, b.train.probe_interval);
  EXPECT_EQ(a.train.probe_max_tokens, b.train.probe_max_tokens);
  EXPECT_EQ(a.eval.lengths, b.eval.lengths);
  EXPECT_EQ(a.eval.split, b.eval.split);
  EXPECT_EQ(a.eval.batch_tokens, b.eval.batch_tokens);
}

// A valid config in which every field differs from its default.
Config all_changed() {
  Config c;
  c.data.dir = "corpus/dir";
  c.data.tokenizer = TokenizerKind::kBpe;  // the one tokenizer data.vocab_size may be set for
  c.data.min_freq = 3;
  c.data.max_vocab = 5000;
  c.data.vocab_size = 300;
  c.model.pos_encoding = PosEncoding::kRelativeLearned;
  c.model.n_layer = 6;
  c.model.d_model = 96;
  c.model.n_head = 3;
  c.model.d_head = 32;
  c.model.d_inner = 333;
  c.model.dropout = 0.123456789012345;  // many digits: the round trip must be exact
  c.model.dropatt = 0.05;
  c.model.pre_norm = true;
  c.model.tie_weights = false;
  c.model.clamp_len = 77;
  c.model.max_rel_dist = 100;
  c.model.init_std = 0.01;
  c.train.tgt_len = 64;
  c.train.tgt_len_max = 96;
  c.train.mem_len = 32;
  c.train.batch_size = 8;
  c.train.max_steps = 10;
  c.train.lr = 1.0 / 3.0;
  c.train.warmup_steps = 5;
  c.train.min_lr_ratio = 0.5;
  c.train.weight_decay = 0.01;
  c.train.clip = 1.5;
  c.train.seed = 42;
  c.train.log_interval = 1;
  c.train.eval_interval = 0;
  c.train.eval_max_tokens = 999;
  c.train.threads = 2;
  c.train.device = "cuda:1";  // a name only: configs do not look at the machine
  c.train.precision = Precision::kBf16;
  c.train.skip_nonfinite = true;
  c.train.same_length = true;
  c.train.probes = "copy copy.count=50";
  c.train.probe_interval = 7;
  c.train.probe_max_tokens = 12345;
  c.eval.lengths = {16, 32};
  c.eval.split = "test";
  c.eval.batch_tokens = 1024;
  return c;
}

const std::vector<std::string> kAllKeys = {"data.dir",
                                           "data.tokenizer",
                                           "data.min_freq",
                                           "data.max_vocab",
                                           "data.vocab_size",
                                           "model.pos_encoding",
                                           "model.n_layer",
                                           "model.d_model",
                                           "model.n_head",
                                           "model.d_head",
                                           "model.d_inner",
                                           "model.dropout",
                                           "model.dropatt",
                                           "model.pre_norm",
                                           "model.tie_weights",
                                           "model.clamp_len",
                                           "model.max_rel_dist",
                                           "model.init_std",
                                           "model.adaptive",
                                           "train.tgt_len",
                                           "train.tgt_len_max",
                                           "train.mem_len",
                                           "train.same_length",
                                           "train.batch_size",
                                           "train.max_steps",
                                           "train.lr",
                                           "train.warmup_steps",
                                           "train.min_lr_ratio",
                                           "train.weight_decay",
                                           "train.clip",
                                           "train.seed",
                                           "train.log_interval",
                                           "train.eval_interval",
                                           "train.eval_max_tokens",
                                           "train.threads",
                                           "train.device",
                                           "train.precision",
                                           "train.skip_nonfinite",
                                           "train.probes",
                                           "train.probe_interval",
                                           "train.probe_max_tokens",
                                           "eval.lengths",
                                           "eval.split",
                                           "eval.batch_tokens"};

const json& at_path(const json& j, const std::string& path) {
  const size_t dot = path.find('.');
  return j.at(path.substr(0, dot)).at(path.substr(dot + 1));
}

// ---------------------------------------------------------------------------------------------
// Defaults and round trip.

TEST(ConfigDefaults, OnlyDataDirGivesDefaults) {
  const Config c = config_from_json(json::parse(R"({"data": {"dir": "x"}})"), "cfg.json");
  Config expected;
  expected.data.dir = "x";
  expect_same_config(c, expected);
  // Spot-check values the header documents, so a changed default is a visible decision.
  EXPECT_EQ(c.model.pos_encoding, PosEncoding::kRelative);
  EXPECT_EQ(c.model.d_model, 256);
  EXPECT_EQ(c.train.mem_len, 128);
  EXPECT_EQ(c.eval.lengths, (std::vector<int64_t>{64, 128, 256, 512, 1024}));
  EXPECT_EQ(c.eval.split, "valid");
}

TEST(ConfigDefaults, EmptySectionsAreAllowed) {
  const json j = json::parse(R"({"data": {"dir": "x"}, "model": {}, "train": {}, "eval": {}})");
  EXPECT_NO_THROW(config_from_json(j, "cfg.json"));
}

TEST(ConfigRoundTrip, ToJsonWritesEveryKeyResolved) {
  Config c;
  c.data.dir = "x";
  const json j = config_to_json(c);
  size_t count = 0;
  for (const auto& section : j.items()) count += section.value().size();
  EXPECT_EQ(count, kAllKeys.size()) << j.dump(2);
  for (const std::string& key : kAllKeys) {
    EXPECT_NO_THROW(at_path(j, key)) << key << " missing from " << j.dump();
  }
  EXPECT_EQ(at_path(j, "model.pos_encoding"), "relative");
  EXPECT_EQ(at_path(j, "data.tokenizer"), "char");
  EXPECT_EQ(at_path(j, "train.precision"), "fp32");
  EXPECT_EQ(at_path(j, "eval.lengths"), json::parse("[64, 128, 256, 512, 1024]"));
}

TEST(ConfigRoundTrip, EveryFieldSurvivesThroughText) {
  const Config c = all_changed();
  // Guard the fixture: if a key kept its default, the round trip could not catch its loss.
  Config defaults;
  defaults.data.dir = "x";
  const json changed = config_to_json(c);
  const json unchanged = config_to_json(defaults);
  for (const std::string& key : kAllKeys) {
    if (key == "model.adaptive") continue;  // needs the word tokenizer: its own test below
    EXPECT_NE(at_path(changed, key), at_path(unchanged, key)) << key << " is not changed";
  }
  const Config back = config_from_json(json::parse(changed.dump()), "run/config.json");
  expect_same_config(back, c);
  EXPECT_EQ(config_to_json(back), changed);
}

TEST(ConfigRoundTrip, AdaptiveSurvivesThroughText) {
  Config c;
  c.data.dir = "x";
  c.data.tokenizer = TokenizerKind::kWord;
  c.model.adaptive = AdaptiveConfig{{100, 200}, 2, {false, true, false}};
  const json j = config_to_json(c);
  EXPECT_NE(at_path(j, "model.adaptive"), json(nullptr));
  const Config back = config_from_json(json::parse(j.dump()), "run/config.json");
  expect_same_config(back, c);
  EXPECT_EQ(config_to_json(back), j);
}

TEST(ConfigRoundTrip, EveryEnumValue) {
  for (const auto& t : encoding_registry()) {
    EXPECT_EQ(parse_pos_encoding(to_string(t.id), "k"), t.id);
    EXPECT_EQ(to_string(t.id), t.name);
  }
  for (TokenizerKind e : {TokenizerKind::kChar, TokenizerKind::kWord}) {
    EXPECT_EQ(parse_tokenizer_kind(to_string(e), "k"), e);
  }
  for (Precision e : {Precision::kFp32, Precision::kBf16}) {
    EXPECT_EQ(parse_precision(to_string(e), "k"), e);
  }
  EXPECT_EQ(to_string(PosEncoding::kRelativeLearned), "relative_learned");
  EXPECT_EQ(to_string(TokenizerKind::kWord), "word");
  EXPECT_EQ(to_string(Precision::kBf16), "bf16");
}

TEST(ConfigEnums, ParseErrorListsValidNames) {
  const std::string message =
      input_error_of([] { parse_pos_encoding("relatve", "model.pos_encoding"); });
  EXPECT_EQ(message, "model.pos_encoding: \"relatve\" is not valid; expected one of " +
                         join(encoding_names()));
  expect_contains(input_error_of([] { parse_tokenizer_kind("wordpiece", "data.tokenizer"); }),
                  "char, byte, word, bpe, unigram");
  expect_contains(input_error_of([] { parse_precision("fp16", "train.precision"); }), "fp32, bf16");
}

// ---------------------------------------------------------------------------------------------
// Accepted edge values.

struct GoodCase {
  const char* name;
  const char* json_text;
};

// gtest prints parameters as bytes unless told how; the case name is what a reader needs.
void PrintTo(const GoodCase& c, std::ostream* os) { *os << c.name; }

class ConfigAccepts : public ::testing::TestWithParam<GoodCase> {};

TEST_P(ConfigAccepts, Parses) {
  const json j = json::parse(GetParam().json_text);
  EXPECT_NO_THROW(config_from_json(j, "cfg.json")) << GetParam().json_text;
}

const GoodCase kGoodCases[] = {
    {"absolute_without_memory",
     R"({"data":{"dir":"x"},"model":{"pos_encoding":"absolute"},"train":{"mem_len":0}})"},
    {"integer_for_double", R"({"data":{"dir":"x"},"train":{"lr":1,"clip":0}})"},
    {"zero_dropout_and_ratio_edges",
     R"({"data":{"dir":"x"},"model":{"dropout":0},"train":{"min_lr_ratio":1}})"},
    {"zero_ratio", R"({"data":{"dir":"x"},"train":{"min_lr_ratio":0}})"},
    {"threads_at_limit", R"({"data":{"dir":"x"},"train":{"threads":1024}})"},
    {"zero_memory_and_warmup", R"({"data":{"dir":"x"},"train":{"mem_len":0,"warmup_steps":0}})"},
    {"custom_heads", R"({"data":{"dir":"x"},"model":{"d_model":96,"n_head":3,"d_head":32}})"},
    {"single_length", R"({"data":{"dir":"x"},"eval":{"lengths":[1],"split":"test"}})"},
    {"word_tokenizer", R"({"data":{"dir":"x","tokenizer":"word","max_vocab":0}})"},
};

INSTANTIATE_TEST_SUITE_P(Config, ConfigAccepts, ::testing::ValuesIn(kGoodCases),
                         [](const auto& info) { return std::string(info.param.name); });

// ---------------------------------------------------------------------------------------------
// Rejections: each malformed config must throw InputError naming the source, key and value.

struct BadCase {
  std::string name;
  std::string json_text;
  std::vector<std::string> expected;  // substrings of what()
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

class ConfigRejects : public ::testing::TestWithParam<BadCase> {};

TEST_P(ConfigRejects, ThrowsInputErrorNamingKey) {
  const json j = json::parse(GetParam().json_text);
  SCOPED_TRACE(GetParam().json_text);
  const std::string message = input_error_of([&] { config_from_json(j, "cfg.json"); });
  EXPECT_EQ(message.rfind("cfg.json: ", 0), 0u) << "source not first in: " << message;
  for (const std::string& part : GetParam().expected) expect_contains(message, part);
}

// Wraps one section's content into an otherwise valid config.
std::string with(const char* section, const char* content) {
  if (std::string(section) == "data") return std::string(R"({"data":)") + content + "}";
  return std::string(R"({"data":{"dir":"x"},")") + section + "\":" + content + "}";
}

const std::vector<BadCase>& bad_cases() {
  static const std::vector<BadCase> cases = [] {
    std::vector<BadCase> out;
    auto add = [&](std::string name, std::string text, std::vector<std::string> expected) {
      out.push_back({std::move(name), std::move(text), std::move(expected)});
    };
    // Shape of the document.
    add("top_level_array", "[1, 2]", {"JSON object", "[1,2]"});
    add("top_level_unknown", R"({"data":{"dir":"x"},"modle":{}})",
        {"unknown key \"modle\"", "data, model, train, eval", "did you mean \"model\""});
    add("section_not_object", with("model", "3"), {"model must be an object, got 3"});
    add("section_null", with("train", "null"), {"train must be an object, got null"});
    // Unknown keys in each section, listing the valid ones.
    add("unknown_data_key", with("data", R"({"dir":"x","dirs":"y"})"),
        {"unknown key \"data.dirs\"", "valid keys in \"data\": dir, tokenizer, min_freq"});
    add("unknown_model_key", with("model", R"({"n_layers":4})"),
        {"unknown key \"model.n_layers\"",
         "valid keys in \"model\": pos_encoding, n_layer, d_model, n_head, d_head, d_inner",
         "did you mean \"n_layer\""});
    add("unknown_train_key", with("train", R"({"learning_rate":0.1})"),
        {"unknown key \"train.learning_rate\"", "valid keys in \"train\": tgt_len, mem_len"});
    add("unknown_eval_key", with("eval", R"({"length":[64]})"),
        {"unknown key \"eval.length\"", "lengths, split, batch_tokens",
         "did you mean \"lengths\""});
    // Wrong JSON types.
    add("int_as_string", with("model", R"({"n_layer":"four"})"),
        {"model.n_layer must be an integer, got \"four\""});
    add("int_as_float", with("model", R"({"n_layer":2.5})"),
        {"model.n_layer must be an integer, got 2.5"});
    add("int_as_bool", with("train", R"({"batch_size":true})"),
        {"train.batch_size must be an integer, got true"});
    add("int_too_large", with("train", R"({"seed":10000000000000000000})"),
        {"train.seed", "10000000000000000000"});
    add("adaptive_int_too_large",
        with("model", R"({"adaptive":{"cutoffs":[10,18446744073709551615]}})"),
        {"model.adaptive.cutoffs[1] must be an integer that fits in 64 bits"});
    add("double_as_string", with("model", R"({"dropout":"0.1"})"),
        {"model.dropout must be a number, got \"0.1\""});
    add("double_as_bool", with("train", R"({"lr":false})"), {"train.lr must be a number"});
    add("bool_as_int", with("model", R"({"pre_norm":1})"),
        {"model.pre_norm must be true or false, got 1"});
    add("bool_as_string", with("model", R"({"tie_weights":"yes"})"),
        {"model.tie_weights", "\"yes\""});
    add("string_as_number", with("data", R"({"dir":5})"), {"data.dir must be a string, got 5"});
    add("enum_as_number", with("model", R"({"pos_encoding":1})"),
        {"model.pos_encoding must be a string", "relative, absolute, relative_learned"});
    add("lengths_not_array", with("eval", R"({"lengths":64})"),
        {"eval.lengths must be a non-empty array of positive integers, got 64"});
    add("lengths_element_string", with("eval", R"({"lengths":[64,"x"]})"),
        {"eval.lengths[1] must be an integer, got \"x\""});
    add("lengths_element_float", with("eval", R"({"lengths":[64.5]})"),
        {"eval.lengths[0]", "64.5"});
    // Enumerations.
    add("bad_tokenizer", with("data", R"({"dir":"x","tokenizer":"wordpiece"})"),
        {"data.tokenizer: \"wordpiece\" is not valid; expected one of char, byte, word, bpe, "
         "unigram"});
    // data.vocab_size belongs to the subword tokenizers, and they need it.
    add("bpe_without_vocab_size", with("data", R"({"dir":"x","tokenizer":"bpe"})"),
        {"data.vocab_size is not set; the bpe tokenizer needs it"});
    add("unigram_negative_vocab_size",
        with("data", R"({"dir":"x","tokenizer":"unigram","vocab_size":-5})"),
        {"data.vocab_size", "-5"});
    add("vocab_size_too_large",
        with("data", R"({"dir":"x","tokenizer":"bpe","vocab_size":5000000})"),
        {"data.vocab_size (5000000) is too large"});
    add("vocab_size_with_word", with("data", R"({"dir":"x","tokenizer":"word","vocab_size":300})"),
        {"data.vocab_size (300) applies to the bpe and unigram tokenizers, not word",
         "data.max_vocab"});
    add("vocab_size_with_char", with("data", R"({"dir":"x","vocab_size":300})"), {"not char"});
    add("bad_pos_encoding", with("model", R"({"pos_encoding":"relatve"})"),
        {"model.pos_encoding: \"relatve\" is not valid; expected one of relative, absolute, "
         "relative_learned"});
    add("bad_precision", with("train", R"({"precision":"fp16"})"),
        {"train.precision: \"fp16\"", "fp32, bf16"});
    add("bad_split", with("eval", R"({"split":"train"})"),
        {"eval.split: \"train\"", "valid, test"});
    // data.dir is required and non-empty.
    add("empty_document", "{}", {"data.dir is required"});
    add("data_without_dir", R"({"data":{"tokenizer":"char"}})", {"data.dir is required"});
    add("no_data_section", R"({"model":{"n_layer":2}})", {"data.dir is required"});
    add("empty_dir", with("data", R"({"dir":""})"), {"data.dir is empty"});
    // Sizes that must be >= 1.
    for (const char* key : {"n_layer", "n_head", "d_head", "d_inner", "max_rel_dist"}) {
      add(std::string(key) + "_zero", with("model", (std::string("{\"") + key + "\":0}").c_str()),
          {std::string("model.") + key + " (0) must be >= 1"});
    }
    add("d_model_zero", with("model", R"({"d_model":0})"), {"model.d_model (0) must be >= 1"});
    for (const char* key : {"tgt_len", "batch_size", "max_steps", "log_interval"}) {
      add(std::string(key) + "_zero", with("train", (std::string("{\"") + key + "\":0}").c_str()),
          {std::string("train.") + key + " (0) must be >= 1"});
    }
    add("min_freq_zero", with("data", R"({"dir":"x","min_freq":0})"),
        {"data.min_freq (0) must be >= 1"});
    add("batch_tokens_zero", with("eval", R"({"batch_tokens":0})"),
        {"eval.batch_tokens (0) must be >= 1"});
    add("n_layer_negative", with("model", R"({"n_layer":-3})"), {"model.n_layer (-3)"});
    // Counts that must be >= 0.
    for (const char* key : {"mem_len", "warmup_steps", "eval_interval", "eval_max_tokens"}) {
      add(std::string(key) + "_negative",
          with("train", (std::string("{\"") + key + "\":-1}").c_str()),
          {std::string("train.") + key + " (-1) must be >= 0"});
    }
    add("clamp_len_negative", with("model", R"({"clamp_len":-1})"),
        {"model.clamp_len (-1) must be >= 0"});
    add("max_vocab_negative", with("data", R"({"dir":"x","max_vocab":-1})"),
        {"data.max_vocab (-1) must be >= 0"});
    add("threads_negative", with("train", R"({"threads":-1})"), {"train.threads (-1)", "1024"});
    add("threads_too_many", with("train", R"({"threads":1025})"),
        {"train.threads (1025) must be in [0, 1024]"});
    // Real-valued ranges.
    add("dropout_one", with("model", R"({"dropout":1})"),
        {"model.dropout (1.0) must be in [0, 1)"});
    add("dropout_negative", with("model", R"({"dropout":-0.1})"), {"model.dropout (-0.1)"});
    add("dropatt_one", with("model", R"({"dropatt":1.0})"), {"model.dropatt (1.0)"});
    add("init_std_zero", with("model", R"({"init_std":0})"), {"model.init_std (0.0) must be"});
    add("lr_zero", with("train", R"({"lr":0})"), {"train.lr (0.0) must be a finite number > 0"});
    add("lr_negative", with("train", R"({"lr":-0.001})"), {"train.lr (-0.001)"});
    add("min_lr_ratio_above_one", with("train", R"({"min_lr_ratio":1.5})"),
        {"train.min_lr_ratio (1.5) must be in [0, 1]"});
    add("weight_decay_negative", with("train", R"({"weight_decay":-1})"),
        {"train.weight_decay (-1.0)"});
    add("clip_negative", with("train", R"({"clip":-0.25})"), {"train.clip (-0.25)"});
    // Cross-field rules.
    add("d_model_mismatch", with("model", R"({"d_model":500})"),
        {"model.d_model (500) must equal model.n_head * model.d_head (4 * 64 = 256)"});
    add("d_model_mismatch_divisible", with("model", R"({"d_model":512,"n_head":4,"d_head":64})"),
        {"model.d_model (512)", "(4 * 64 = 256)"});
    add("absolute_with_memory", with("model", R"({"pos_encoding":"absolute"})"),
        {"train.mem_len", "128", "absolute", "no memory", "set train.mem_len=0"});
    add("empty_lengths", with("eval", R"({"lengths":[]})"), {"eval.lengths is empty"});
    add("zero_length", with("eval", R"({"lengths":[64,0]})"), {"eval.lengths[1] (0) must be >= 1"});
    add("negative_length", with("eval", R"({"lengths":[-5]})"), {"eval.lengths[0] (-5)"});
    add("repeated_length", with("eval", R"({"lengths":[32,64,32]})"),
        {"eval.lengths[2] (32) repeats eval.lengths[0]"});
    // A negative seed would wrap to another one (seeds are unsigned 64-bit).
    add("seed_negative", with("train", R"({"seed":-1})"), {"train.seed (-1) must be >= 0"});
    return out;
  }();
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Config, ConfigRejects, ::testing::ValuesIn(bad_cases()),
                         [](const auto& info) { return info.param.name; });

TEST(ConfigValidate, RejectsNonFiniteValuesSetInCode) {
  Config c;
  c.data.dir = "x";
  EXPECT_NO_THROW(validate(c));
  c.train.lr = std::numeric_limits<double>::infinity();
  expect_contains(input_error_of([&] { validate(c); }), "train.lr (inf)");
  c.train.lr = std::nan("");
  expect_contains(input_error_of([&] { validate(c); }), "train.lr (nan)");
  c.train.lr = 1e-3;
  c.model.dropout = std::nan("");
  expect_contains(input_error_of([&] { validate(c); }), "model.dropout (nan)");
}

TEST(ConfigValidate, HugeHeadProductDoesNotOverflow) {
  Config c;
  c.data.dir = "x";
  c.model.n_head = int64_t{1} << 40;
  c.model.d_head = int64_t{1} << 40;
  expect_contains(input_error_of([&] { validate(c); }), "overflows");
}

TEST(ConfigValidate, NoSourcePrefixWhenCalledDirectly) {
  Config c;  // data.dir is empty by default
  EXPECT_EQ(input_error_of([&] { validate(c); }).rfind("data.dir", 0), 0u);
}

// ---------------------------------------------------------------------------------------------
// --set overrides.

// A value given with --set is not in the file: an error about it names the --set (the
// last one of its key), one about the file's own keys names the file.
TEST(ConfigOverride, AnErrorAboutASetKeyNamesTheSetNotTheFile) {
  const json file = json::parse(R"({"data": {"dir": "x"}, "model": {"pos_encoding": "rope"}})");
  const auto error = [&](const std::vector<std::string>& overrides, const json& base) {
    return input_error_of([&] { config_with_overrides(base, overrides, "cfg.json"); });
  };
  std::string message = error({"model.rope_base=5", "model.rope_base=-1"}, file);
  EXPECT_EQ(
      message.rfind("--set model.rope_base=-1 (over cfg.json): model.rope_base (-1) must be", 0),
      0u)
      << message;
  // A rule between a --set key and a file key names the --set.
  message = error({"model.n_head=3"}, file);
  EXPECT_EQ(
      message.rfind("--set model.n_head=3 (over cfg.json): model.d_model (256) must equal", 0), 0u)
      << message;
  // train.tgt_len is not named by a message about train.tgt_len_max alone.
  json bad_file = file;
  bad_file["train"]["tgt_len_max"] = -1;
  message = error({"train.lr=0.01"}, bad_file);
  EXPECT_EQ(message.rfind("cfg.json: train.tgt_len_max", 0), 0u) << message;
  message = error({"train.tgt_len=8"}, bad_file);
  EXPECT_EQ(message.rfind("--set train.tgt_len=8 (over cfg.json): train.tgt_len_max (-1)", 0), 0u)
      << message;
  // Without an error, the overrides are applied.
  EXPECT_EQ(config_with_overrides(file, {"model.n_layer=7"}, "cfg.json").model.n_layer, 7);
}

TEST(ConfigOverride, CreatesMissingSection) {
  json j = json::parse(R"({"data": {"dir": "x"}})");
  apply_override(j, "model.n_layer=6");
  EXPECT_EQ(j["model"]["n_layer"], 6);
  EXPECT_EQ(config_from_json(j, "cfg.json").model.n_layer, 6);
}

TEST(ConfigOverride, WorksOnAnEmptyTree) {
  json j;  // null, as when no --config file is given
  apply_override(j, "data.dir=corpus");
  EXPECT_EQ(j, json::parse(R"({"data": {"dir": "corpus"}})"));
}

TEST(ConfigOverride, ReplacesExistingValue) {
  json j = json::parse(R"({"data": {"dir": "x"}, "train": {"lr": 0.1, "seed": 1}})");
  apply_override(j, "train.lr=0.002");
  EXPECT_EQ(j["train"]["lr"], 0.002);
  EXPECT_EQ(j["train"]["seed"], 1);
}

struct OverrideCase {
  const char* name;
  const char* assignment;
  const char* key;
  const char* expected_json;  // the value stored under the key
};

void PrintTo(const OverrideCase& c, std::ostream* os) { *os << c.assignment; }

class ConfigOverrideValue : public ::testing::TestWithParam<OverrideCase> {};

TEST_P(ConfigOverrideValue, StoresParsedValue) {
  json j = json::parse(R"({"data": {"dir": "x"}})");
  apply_override(j, GetParam().assignment);
  EXPECT_EQ(at_path(j, GetParam().key), json::parse(GetParam().expected_json)) << j.dump();
  EXPECT_NO_THROW(config_from_json(j, "cfg.json")) << j.dump();
}

const OverrideCase kOverrideCases[] = {
    {"integer", "model.n_layer=2", "model.n_layer", "2"},
    {"double", "train.lr=1e-3", "train.lr", "0.001"},
    {"integer_for_double", "train.clip=1", "train.clip", "1"},
    {"boolean", "model.pre_norm=true", "model.pre_norm", "true"},
    {"plain_string_enum", "data.tokenizer=word", "data.tokenizer", "\"word\""},
    {"quoted_string", "eval.split=\"test\"", "eval.split", "\"test\""},
    {"numeric_looking_dir", "data.dir=2024", "data.dir", "\"2024\""},
    {"value_with_equals", "data.dir=a=b", "data.dir", "\"a=b\""},
    {"json_array", "eval.lengths=[8,16]", "eval.lengths", "[8,16]"},
    {"comma_list", "eval.lengths=64,128,256", "eval.lengths", "[64,128,256]"},
    {"single_length", "eval.lengths=64", "eval.lengths", "[64]"},
    {"spaces_around_key", " model.n_layer =3", "model.n_layer", "3"},
};

INSTANTIATE_TEST_SUITE_P(Config, ConfigOverrideValue, ::testing::ValuesIn(kOverrideCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ConfigOverride, AbsoluteAsPlainWordParses) {
  json j = json::parse(R"({"data": {"dir": "x"}})");
  apply_override(j, "model.pos_encoding=absolute");
  apply_override(j, "train.mem_len=0");
  EXPECT_EQ(config_from_json(j, "cfg.json").model.pos_encoding, PosEncoding::kAbsolute);
}

struct BadOverride {
  const char* name;
  const char* assignment;
  std::vector<std::string> expected;
};

void PrintTo(const BadOverride& c, std::ostream* os) { *os << c.assignment; }

class ConfigOverrideRejects : public ::testing::TestWithParam<BadOverride> {};

TEST_P(ConfigOverrideRejects, ThrowsInputError) {
  json j = json::parse(R"({"data": {"dir": "x"}})");
  const json before = j;
  const std::string message = input_error_of([&] { apply_override(j, GetParam().assignment); });
  for (const std::string& part : GetParam().expected) expect_contains(message, part);
  EXPECT_EQ(j, before) << "a rejected override must leave the tree alone";
}

const BadOverride kBadOverrides[] = {
    {"missing_equals", "model.n_layer", {"model.n_layer", "missing '='"}},
    {"empty_key", "=4", {"empty key"}},
    {"blank_key", " =4", {"section.key"}},
    {"no_section", "n_layer=4", {"n_layer=4", "section.key"}},
    {"too_deep", "model.n_layer.x=4", {"model.n_layer.x=4", "section.key"}},
    {"trailing_dot", "model.=4", {"section.key"}},
    {"unknown_section",
     "modle.n_layer=4",
     {"unknown section \"modle\"", "data, model, train, eval", "did you mean \"model\""}},
    {"unknown_key",
     "model.n_layers=4",
     {"--set model.n_layers=4", "unknown key \"model.n_layers\"",
      "valid keys in \"model\": pos_encoding, n_layer", "did you mean \"n_layer\""}},
    {"wrong_type",
     "model.n_layer=four",
     {"--set model.n_layer=four", "model.n_layer must be an integer, got \"four\""}},
    {"float_for_integer", "train.batch_size=2.5", {"train.batch_size", "2.5"}},
    {"bad_enum",
     "model.pos_encoding=relatve",
     {"model.pos_encoding: \"relatve\"", "relative, absolute, relative_learned"}},
    {"bad_comma_list", "eval.lengths=64,x", {"eval.lengths[1]", "\"x\""}},
    {"bad_boolean", "model.pre_norm=yes", {"model.pre_norm must be true or false"}},
};

INSTANTIATE_TEST_SUITE_P(Config, ConfigOverrideRejects, ::testing::ValuesIn(kBadOverrides),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ConfigOverride, SectionThatIsNotAnObject) {
  json j = json::parse(R"({"data": {"dir": "x"}, "model": 3})");
  expect_contains(input_error_of([&] { apply_override(j, "model.n_layer=2"); }),
                  "\"model\" in the configuration is not an object");
}

// ---------------------------------------------------------------------------------------------
// read_json_file.

class ConfigReadFile : public ::testing::Test {
 protected:
  void SetUp() override {
    // One folder per process so parallel test runs do not share files.
    dir_ = ::testing::TempDir() + "txl_config_test_" + std::to_string(::getpid());
    ::mkdir(dir_.c_str(), 0755);
  }
  void TearDown() override {
    for (const std::string& path : written_) std::remove(path.c_str());
    ::rmdir(dir_.c_str());
  }
  std::string write(const std::string& name, const std::string& content) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << content;
    written_.push_back(path);
    return path;
  }
  std::string dir_;
  std::vector<std::string> written_;
};

TEST_F(ConfigReadFile, ReadsValidJson) {
  const std::string path = write("ok.json", R"({"data": {"dir": "x"}, "model": {"n_layer": 2}})");
  const json j = read_json_file(path);
  EXPECT_EQ(config_from_json(j, path).model.n_layer, 2);
}

TEST_F(ConfigReadFile, MissingFileNamesPath) {
  const std::string path = dir_ + "/absent.json";
  const std::string message = input_error_of([&] { read_json_file(path); });
  expect_contains(message, path);
  expect_contains(message, "no such file");
}

TEST_F(ConfigReadFile, DirectoryNamesPath) {
  const std::string message = input_error_of([&] { read_json_file(dir_); });
  expect_contains(message, dir_);
  expect_contains(message, "directory");
}

TEST_F(ConfigReadFile, SyntaxErrorNamesPathAndByte) {
  const std::string path = write("bad.json", "{\"data\": {\"dir\": \"x\",}}");
  const std::string message = input_error_of([&] { read_json_file(path); });
  expect_contains(message, path);
  expect_contains(message, "invalid JSON at byte 22");
}

TEST_F(ConfigReadFile, EmptyFileIsAnError) {
  const std::string path = write("empty.json", "");
  expect_contains(input_error_of([&] { read_json_file(path); }), path);
}

TEST_F(ConfigReadFile, UnreadableFileNamesPath) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads files regardless of permissions";
  const std::string path = write("secret.json", "{}");
  ::chmod(path.c_str(), 0);
  const std::string message = input_error_of([&] { read_json_file(path); });
  expect_contains(message, path);
  expect_contains(message, "Permission denied");
}

TEST_F(ConfigReadFile, RoundTripThroughFile) {
  const Config c = all_changed();
  const std::string path = write("resolved.json", config_to_json(c).dump(2));
  expect_same_config(config_from_json(read_json_file(path), path), c);
}

// nlohmann::json keeps the last of two equal keys; a config that says two things must be
// refused like one with an unknown key, naming the key path and the file.
TEST_F(ConfigReadFile, DuplicateKeyIsAnErrorNamingItsPathAndTheFile) {
  struct Case {
    std::string name, text, path;
  };
  const std::vector<Case> cases = {
      {"section", R"({"data": {"dir": "a"}, "model": {}, "data": {"dir": "b"}})", "\"data\""},
      {"key", R"({"data": {"dir": "a"}, "model": {"n_layer": 2, "d_model": 16, "n_layer": 3}})",
       "\"model.n_layer\""},
      {"nested", R"({"eval": {"lengths": [8]}, "x": [{"a": 1}, {"b": {"c": 1, "c": 2}}]})",
       "\"x[1].b.c\""},
      {"after_array", R"({"eval": {"lengths": [8, 16], "split": "valid", "split": "test"}})",
       "\"eval.split\""},
  };
  for (const auto& c : cases) {
    const std::string path = write(c.name + ".json", c.text);
    const std::string message = input_error_of([&] { read_json_file(path); });
    expect_contains(message, path);
    expect_contains(message, "duplicate key " + c.path);
  }
}

// Nesting is capped at 64 levels: 100,000 levels of arrays or objects are refused at once
// (it took minutes and gigabytes when every level kept its path), 64 are read.
TEST_F(ConfigReadFile, DeepNestingIsRefusedAtOnceNamingTheFile) {
  const size_t deep = 100000;
  for (const bool objects : {false, true}) {
    std::string text;
    for (size_t i = 0; i < deep; ++i) text += objects ? "{\"a\": " : "[";
    text += "1";
    for (size_t i = 0; i < deep; ++i) text += objects ? "}" : "]";
    const std::string path = write(objects ? "deep_objects.json" : "deep_arrays.json", text);
    const auto start = std::chrono::steady_clock::now();
    const std::string message = input_error_of([&] { read_json_file(path); });
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
    expect_contains(message, path);
    expect_contains(message, "nested deeper than 64 levels");
  }
  std::string ok;
  for (int i = 0; i < 64; ++i) ok += "[";
  ok += "1";
  for (int i = 0; i < 64; ++i) ok += "]";
  EXPECT_NO_THROW(read_json_file(write("deep_ok.json", ok)));
}

TEST_F(ConfigReadFile, EqualKeysInDifferentObjectsAreNotDuplicates) {
  const std::string path =
      write("same_names.json",
            R"({"data": {"dir": "x"}, "model": {"n_layer": 2}, "eval": {"lengths": [8]},
                "other": [{"dir": 1}, {"dir": 2}, [{"dir": 3}]]})");
  const json j = read_json_file(path);
  EXPECT_EQ(j.at("model").at("n_layer"), 2);
  EXPECT_EQ(j.at("other").at(2).at(0).at("dir"), 3);
}

}  // namespace
}  // namespace txl
