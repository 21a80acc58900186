// Seeded random-input tests of everything that reads user input without LibTorch: the config
// parser (random JSON trees, random mutations of a valid config as values and as file text,
// random --set strings) and both tokenizers (random bytes, random valid UTF-8), plus the
// vocabulary reader. The only exception allowed out is InputError; no crash, no hang.
// Properties checked on the inputs that are accepted: a parsed config round-trips through
// config_to_json, and text made of valid UTF-8 always tokenizes and decodes back.
//
// Thousands of cases in a few seconds. TXL_FUZZ_SEED and TXL_FUZZ_SCALE (a multiplier for
// the case counts) explore further by hand, e.g. TXL_FUZZ_SCALE=100 under the sanitizers.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "txl/config/config.h"
#include "txl/data/tokenizer.h"
#include "txl/data/vocab.h"
#include "txl/util/error.h"
#include "txl/util/utf8.h"

namespace txl {
namespace {

using nlohmann::json;

uint64_t fuzz_seed() {
  const char* env = std::getenv("TXL_FUZZ_SEED");
  return env ? std::strtoull(env, nullptr, 10) : 20240611;
}

int scaled(int cases) {
  const char* env = std::getenv("TXL_FUZZ_SCALE");
  const int scale = env ? std::max(1, std::atoi(env)) : 1;
  return cases * scale;
}

// Keys and values that reach deep into the parser more often than random text would.
// clang-format off
const std::vector<std::string> kSections = {"data", "model", "train", "eval"};
const std::vector<std::string> kKeys = {
    "dir", "tokenizer", "min_freq", "max_vocab", "pos_encoding", "n_layer", "d_model", "n_head",
    "d_head", "d_inner", "dropout", "dropatt", "pre_norm", "tie_weights", "clamp_len",
    "max_rel_dist", "init_std", "tgt_len", "mem_len", "batch_size", "max_steps", "lr",
    "warmup_steps", "min_lr_ratio", "weight_decay", "clip", "seed", "log_interval",
    "eval_interval", "eval_max_tokens", "threads", "precision", "skip_nonfinite", "lengths",
    "split", "batch_tokens", "", "modle", "n_layers", "\xC3\xA9t\xC3\xA9"};
const std::vector<std::string> kWords = {
    "char", "word", "relative", "absolute", "relative_learned", "fp32", "bf16", "valid", "test",
    "", " ", "corpus", "null", "1e999", "-0", "NaN", "\xE2\x82\xAC", "\xF0\x9F\x98\x80", "a=b",
    "64,128", "[1,2]", "{\"a\":1}", "\"quoted\"", "true", "0x10", "1e3", "9223372036854775808"};
// clang-format on

class Random {
 public:
  explicit Random(uint64_t seed) : rng_(seed) {}
  int64_t range(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }
  bool coin(double p = 0.5) { return std::bernoulli_distribution(p)(rng_); }
  template <typename T>
  const T& pick(const std::vector<T>& items) {
    return items[range(0, items.size() - 1)];
  }

  std::string bytes(size_t max_len) {
    std::string s(range(0, max_len), '\0');
    for (auto& c : s) c = static_cast<char>(range(0, 255));
    return s;
  }

  // Valid UTF-8 from all planes, weighted towards ASCII and whitespace.
  std::string utf8(size_t max_code_points) {
    std::string s;
    const int64_t n = range(0, max_code_points);
    for (int64_t i = 0; i < n; ++i) {
      char32_t cp;
      switch (range(0, 5)) {
        case 0:
          cp = static_cast<char32_t>(pick(std::vector<int>{' ', '\n', '\t', '\r', '\v', '\f'}));
          break;
        case 1:
        case 2:
          cp = static_cast<char32_t>(range(0x20, 0x7E));
          break;
        case 3:
          cp = static_cast<char32_t>(range(0x80, 0x7FF));
          break;
        case 4:
          cp = static_cast<char32_t>(range(0x800, 0xFFFF));
          break;
        default:
          cp = static_cast<char32_t>(range(0x10000, 0x10FFFF));
          break;
      }
      if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xFFFD;  // surrogates are not scalar values
      append_utf8(s, cp);
    }
    return s;
  }

  json number() {
    switch (range(0, 9)) {
      case 0:
        return 0;
      case 1:
        return range(-3, 3);
      case 2:
        return range(1, 1 << 20);
      case 3:
        return std::numeric_limits<int64_t>::max();
      case 4:
        return std::numeric_limits<int64_t>::min();
      case 5:
        return std::numeric_limits<uint64_t>::max();
      case 6:
        return std::uniform_real_distribution<double>(-2, 2)(rng_);
      case 7:
        return pick(std::vector<double>{1e308, -1e308, 1e-320, 0.5, -0.0, 3.0});
      case 8:
        return pick(std::vector<double>{std::numeric_limits<double>::infinity(),
                                        std::numeric_limits<double>::quiet_NaN()});
      default:
        return range(-1000000, 1000000);
    }
  }

  // A random JSON value whose strings are valid UTF-8, as any parsed file's are.
  json value(int depth) {
    switch (range(0, depth > 0 ? 7 : 4)) {
      case 0:
        return nullptr;
      case 1:
        return coin();
      case 2:
        return number();
      case 3:
        return coin() ? json(pick(kWords)) : json(utf8(8));
      case 4:
        return number();
      case 5: {
        json a = json::array();
        for (int64_t i = range(0, 4); i > 0; --i)
          a.push_back(coin(0.7) ? number() : value(depth - 1));
        return a;
      }
      default: {
        json o = json::object();
        for (int64_t i = range(0, 4); i > 0; --i) {
          o[coin(0.8) ? pick(kKeys) : utf8(6)] = value(depth - 1);
        }
        return o;
      }
    }
  }

  // A config-shaped tree: mostly the real sections and keys, with random values.
  json config_tree() {
    json j = json::object();
    for (const auto& section : kSections) {
      if (coin(0.2)) continue;
      json s = coin(0.95) ? json::object() : value(2);
      if (s.is_object()) {
        for (int64_t i = range(0, 6); i > 0; --i) s[pick(kKeys)] = value(2);
      }
      j[coin(0.97) ? section : pick(kKeys)] = s;
    }
    if (coin(0.8) && j.contains("data") && j["data"].is_object()) j["data"]["dir"] = "corpus";
    return j;
  }

  std::mt19937_64& engine() { return rng_; }

 private:
  std::mt19937_64 rng_;
};

json valid_config() {
  return json::parse(R"({
    "data": {"dir": "corpus", "tokenizer": "char"},
    "model": {"pos_encoding": "relative", "n_layer": 2, "d_model": 32, "n_head": 2, "d_head": 16,
              "d_inner": 64, "dropout": 0.1},
    "train": {"tgt_len": 16, "mem_len": 16, "batch_size": 4, "max_steps": 10, "lr": 0.001},
    "eval": {"lengths": [16, 32]}
  })");
}

// Runs f; InputError is an accepted outcome, any other exception fails the test with `input`.
template <typename F>
bool only_input_errors(F&& f, const std::string& what, const std::string& input) {
  try {
    f();
    return true;
  } catch (const InputError&) {
    return false;
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << " threw " << typeid(e).name() << " (not InputError): " << e.what()
                  << "\ninput: " << json(input).dump(-1, ' ', true, json::error_handler_t::replace);
    return false;
  }
}

// A config that parsed must come back unchanged through its own JSON.
void expect_round_trip(const Config& c, const std::string& input) {
  const json once = config_to_json(c);
  Config again;
  ASSERT_NO_THROW(again = config_from_json(once, "round trip")) << input;
  EXPECT_EQ(config_to_json(again), once) << input;
}

// config_from_json on `j`: true when it gives a Config (which must round-trip), false when it
// throws an InputError; any other outcome is a test failure (only_input_errors).
bool accepts_config(const json& j) {
  const std::string input = j.dump(-1, ' ', false, json::error_handler_t::replace);
  Config c;
  if (!only_input_errors([&] { c = config_from_json(j, "fuzz.json"); }, "config_from_json",
                         input)) {
    return false;
  }
  expect_round_trip(c, input);
  return true;
}

TEST(ConfigFuzz, RandomJsonTreesGiveAConfigOrAnInputError) {
  Random r(fuzz_seed());
  int accepted = 0;
  const int cases = scaled(3000);
  for (int i = 0; i < cases; ++i) {
    const json j = r.coin(0.9) ? r.config_tree() : r.value(4);
    accepted += accepts_config(j);
    if (HasFailure()) break;
  }
  // The generator must reach past the first checks sometimes, or the test proves little.
  EXPECT_GT(accepted, 0);
}

// One random change to a valid config: a value replaced, a key removed or added, a type
// changed, a section replaced.
json mutate(Random& r, json j) {
  const std::string section = r.pick(kSections);
  if (!j.is_object()) j = json::object();
  if (!j[section].is_object() && r.range(0, 5) < 3) j[section] = json::object();
  if (!j[section].is_object()) {
    j[section] = r.value(2);
    return j;
  }
  switch (r.range(0, 5)) {
    case 0:
      j[section][r.pick(kKeys)] = r.value(2);
      break;
    case 1:
      if (j[section].is_object() && !j[section].empty()) j[section].erase(j[section].begin());
      break;
    case 2:
      j[section][r.utf8(5)] = r.number();
      break;
    case 3:
      j[section] = r.value(2);
      break;
    case 4:
      j[r.coin() ? r.pick(kKeys) : r.utf8(4)] = r.value(1);
      break;
    default: {
      // Small numeric nudges: zero, negative and off-by-one sizes are the common mistakes.
      auto& s = j[section];
      if (!s.is_object() || s.empty()) break;
      auto it = s.begin();
      std::advance(it, r.range(0, s.size() - 1));
      // Only well inside the int64 range: the nudge itself must not overflow.
      constexpr int64_t kLimit = int64_t{1} << 40;
      if (it->is_number_integer() && it->get<int64_t>() > -kLimit && it->get<int64_t>() < kLimit) {
        *it = it->get<int64_t>() + r.range(-70, 3);
      }
      break;
    }
  }
  return j;
}

TEST(ConfigFuzz, MutationsOfAValidConfigGiveAConfigOrAnInputError) {
  Random r(fuzz_seed() + 1);
  int accepted = 0;
  const int cases = scaled(3000);
  for (int i = 0; i < cases; ++i) {
    json j = valid_config();
    for (int64_t m = r.range(1, 3); m > 0; --m) j = mutate(r, j);
    accepted += accepts_config(j);
    if (HasFailure()) break;
  }
  EXPECT_GT(accepted, cases / 20);
}

TEST(ConfigFuzz, DamagedConfigFileTextGivesAConfigOrAnInputError) {
  Random r(fuzz_seed() + 2);
  // A new file per case: rewriting one file in place costs milliseconds on ext4 (it flushes
  // on truncate), creating and removing a fresh one costs microseconds.
  const std::string stem = ::testing::TempDir() + "/txl_fuzz_config_" + std::to_string(::getpid());
  const std::string text = valid_config().dump(1);
  const int cases = scaled(1500);
  for (int i = 0; i < cases; ++i) {
    std::string damaged = text;
    for (int64_t m = r.range(1, 4); m > 0; --m) {
      const size_t pos = r.range(0, damaged.size());
      switch (r.range(0, 3)) {
        case 0:
          if (pos < damaged.size()) damaged[pos] = static_cast<char>(r.range(0, 255));
          break;
        case 1:
          damaged.insert(pos, r.coin() ? r.bytes(3) : r.pick(kWords));
          break;
        case 2:
          damaged.erase(pos, r.range(1, 8));
          break;
        default:
          damaged.resize(pos);
          break;
      }
    }
    const std::string path = stem + "_" + std::to_string(i) + ".json";
    std::ofstream(path, std::ios::binary) << damaged;
    only_input_errors([&] { config_from_json(read_json_file(path), path); }, "read_json_file",
                      damaged);
    std::filesystem::remove(path);
    if (HasFailure()) break;
  }
}

TEST(ConfigFuzz, RandomSetAssignmentsGiveAConfigOrAnInputError) {
  Random r(fuzz_seed() + 3);
  const int cases = scaled(4000);
  for (int i = 0; i < cases; ++i) {
    std::string assignment;
    switch (r.range(0, 3)) {
      case 0:  // well-formed key, random value text (argv may hold any bytes)
        assignment = r.pick(kSections) + "." + r.pick(kKeys) + "=" +
                     (r.coin()   ? r.pick(kWords)
                      : r.coin() ? r.utf8(6)
                                 : r.bytes(6));
        break;
      case 1:  // random separators and spacing
        assignment = (r.coin() ? " " : "") + r.pick(kSections) + (r.coin() ? "." : "..") +
                     r.pick(kKeys) + (r.coin() ? " = " : "=") + r.value(1).dump();
        break;
      case 2:  // list syntax for lengths
        assignment = "eval.lengths=" + r.pick(kWords) + "," + std::to_string(r.range(-5, 99)) +
                     (r.coin() ? "," : "");
        break;
      default:
        assignment = r.coin() ? r.bytes(24) : r.utf8(24);
        break;
    }
    json j = valid_config();
    only_input_errors(
        [&] {
          apply_override(j, assignment);
          const Config c = config_from_json(j, "fuzz.json");
          expect_round_trip(c, assignment);
        },
        "apply_override", assignment);
    if (HasFailure()) break;
  }
}

DataConfig data_config(TokenizerKind kind) {
  DataConfig c;
  c.dir = "unused";
  c.tokenizer = kind;
  return c;
}

TEST(TokenizerFuzz, RandomBytesGiveTokensOrAnInputError) {
  Random r(fuzz_seed() + 4);
  const Vocab reference_char =
      build_vocab("the cat sat.\n", data_config(TokenizerKind::kChar), "fixture");
  const Vocab reference_word =
      build_vocab("the cat sat.\n", data_config(TokenizerKind::kWord), "fixture");
  const int cases = scaled(3000);
  for (int i = 0; i < cases; ++i) {
    // Mostly valid text with a few random bytes spliced in, so the error paths are reached
    // at every offset rather than at byte 0.
    std::string text = r.utf8(40);
    for (int64_t m = r.range(0, 3); m > 0; --m) text.insert(r.range(0, text.size()), r.bytes(3));
    for (TokenizerKind kind : {TokenizerKind::kChar, TokenizerKind::kWord}) {
      const Vocab& reference = kind == TokenizerKind::kChar ? reference_char : reference_word;
      only_input_errors(
          [&] {
            const auto tokens = split_tokens(text, kind, "fuzz.txt");
            EXPECT_EQ(count_tokens(text, kind, "fuzz.txt"), static_cast<int64_t>(tokens.size()));
            const Vocab vocab = build_vocab(text, data_config(kind), "fuzz.txt");
            EXPECT_EQ(encode(text, vocab, "fuzz.txt").size(), tokens.size());
            EncodeStats stats;
            const auto ids = encode(text, reference, "fuzz.txt", &stats);
            EXPECT_EQ(stats.tokens, static_cast<int64_t>(ids.size()));
            decode(std::vector<int64_t>(ids.begin(), ids.end()), reference);
          },
          "tokenizer", text);
      only_input_errors([&] { decode_utf8(text, "fuzz.txt"); }, "decode_utf8", text);
    }
    if (HasFailure()) break;
  }
}

TEST(TokenizerFuzz, ValidUtf8AlwaysTokenizesAndDecodesBack) {
  Random r(fuzz_seed() + 5);
  const int cases = scaled(3000);
  for (int i = 0; i < cases; ++i) {
    const std::string text = r.utf8(60);
    SCOPED_TRACE(json(text).dump());
    // char: one token per code point, and decoding gives the text back exactly.
    const Vocab chars = build_vocab(text, data_config(TokenizerKind::kChar), "fuzz.txt");
    const auto char_ids = encode(text, chars, "fuzz.txt");
    EXPECT_EQ(static_cast<int64_t>(char_ids.size()),
              static_cast<int64_t>(decode_utf8(text, "fuzz.txt").size()));
    EXPECT_EQ(decode(std::vector<int64_t>(char_ids.begin(), char_ids.end()), chars), text);
    // word: no token holds whitespace, every line ends in <eos>, no <unk> with its own vocab.
    const Vocab words = build_vocab(text, data_config(TokenizerKind::kWord), "fuzz.txt");
    EncodeStats stats;
    const auto word_ids = encode(text, words, "fuzz.txt", &stats);
    EXPECT_EQ(stats.unknown, 0);
    for (const auto& token : split_tokens(text, TokenizerKind::kWord, "fuzz.txt")) {
      EXPECT_FALSE(token.empty());
      EXPECT_EQ(token.find_first_of(" \t\n\r\v\f"), std::string::npos);
    }
    const std::string decoded =
        decode(std::vector<int64_t>(word_ids.begin(), word_ids.end()), words);
    EXPECT_EQ(split_tokens(decoded, TokenizerKind::kWord, "decoded").size(), word_ids.size());
    if (HasFailure()) break;
  }
}

TEST(VocabFuzz, RandomVocabularyFilesGiveAVocabularyOrAnInputError) {
  Random r(fuzz_seed() + 6);
  const json valid = Vocab(TokenizerKind::kWord, {"<unk>", "<eos>", "the", "cat"}).to_json();
  const int cases = scaled(2000);
  for (int i = 0; i < cases; ++i) {
    json j = valid;
    switch (r.range(0, 3)) {
      case 0:
        j[r.pick(std::vector<std::string>{"format", "version", "tokenizer", "tokens", "extra"})] =
            r.value(2);
        break;
      case 1:
        if (j["tokens"].is_array()) j["tokens"].push_back(r.coin() ? r.value(1) : json(r.utf8(3)));
        break;
      case 2:
        j["tokens"][r.range(0, 3)] = r.coin() ? json(r.pick(kWords)) : r.value(1);
        break;
      default:
        j = r.value(3);
        break;
    }
    if (r.coin(0.3) && j.is_object()) j["tokenizer"] = "char";
    const std::string input = j.dump(-1, ' ', false, json::error_handler_t::replace);
    only_input_errors([&] { Vocab::from_json(j, "vocab.json"); }, "Vocab::from_json", input);
    if (HasFailure()) break;
  }
}

}  // namespace
}  // namespace txl
