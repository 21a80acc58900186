// Reading grows in step with the input (issue 54, cause 4): an object of 2 x 10^5 keys (a
// safetensors header of that many tensors, each a small object) or an array of that many
// objects parses in well under a second (10^5 took 78 s when each object's end scanned the
// whole enclosing object), a duplicate among them is still refused by its path, and
// eval.lengths is checked for repeats in one pass and capped.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "base_test_util.h"
#include "txl/config/config.h"
#include "txl/util/json.h"

namespace txl {
namespace {

using testing::contains;
using testing::input_error;

constexpr int kKeys = 200000;

double seconds_of(const std::function<void()>& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// {"t0": {"dtype": "F32", "shape": [1, 2], "data_offsets": [0, 8]}, "t1": ...}
std::string header_of(int tensors, const std::string& extra_key = "") {
  std::string text = "{";
  for (int i = 0; i < tensors; ++i) {
    text += "\"t" + std::to_string(i) + "\": {\"dtype\": \"F32\", \"shape\": [1, 2], " +
            "\"data_offsets\": [" + std::to_string(8 * i) + ", " + std::to_string(8 * i + 8) +
            "]}, ";
  }
  if (!extra_key.empty()) text += "\"" + extra_key + "\": {}, ";
  text += "\"__metadata__\": {}}";
  return text;
}

TEST(JsonScale, AnObjectOfManyObjectsParsesInLinearTime) {
  const std::string text = header_of(kKeys);
  nlohmann::json parsed;
  // Generous: about 0.5 s here; the quadratic parser took minutes at this size.
  EXPECT_LT(seconds_of([&] { parsed = parse_json_strict(text, "header.json"); }), 10.0);
  ASSERT_EQ(parsed.size(), size_t(kKeys) + 1);
  EXPECT_EQ(parsed.at("t199999").at("data_offsets").at(1), 8 * 199999 + 8);
  EXPECT_EQ(parsed.at("t7").at("shape"), nlohmann::json::parse("[1, 2]"));
}

TEST(JsonScale, AnArrayOfManyObjectsParsesInLinearTime) {
  std::string text = "[";
  for (int i = 0; i < kKeys; ++i) text += "{\"a\": " + std::to_string(i) + "}, ";
  text += "{}]";
  nlohmann::json parsed;
  EXPECT_LT(seconds_of([&] { parsed = parse_json_strict(text, "list.json"); }), 10.0);
  ASSERT_EQ(parsed.size(), size_t(kKeys) + 1);
  EXPECT_EQ(parsed.at(kKeys - 1).at("a"), kKeys - 1);
}

TEST(JsonScale, ADuplicateAmongManyKeysIsStillRefusedByItsPath) {
  const std::string message =
      input_error([&] { parse_json_strict(header_of(kKeys, "t123456"), "header.json"); });
  EXPECT_TRUE(contains(message, "header.json: duplicate key \"t123456\"")) << message;
  const std::string nested = input_error(
      [] { parse_json_strict(R"({"a": [1, {"b": {"c": 1, "d": [], "c": 2}}]})", "nested.json"); });
  EXPECT_TRUE(contains(nested, "duplicate key \"a[1].b.c\"")) << nested;
}

TEST(JsonScale, SyntaxErrorsLeaveAsTheParserThrowsThem) {
  EXPECT_THROW(parse_json_strict(R"({"a": 1,})", "bad.json"), nlohmann::json::parse_error);
  EXPECT_THROW(parse_json_strict("[1e999]", "big.json"), nlohmann::json::out_of_range);
  EXPECT_EQ(parse_json_strict("[1, 2.5, \"x\", null, true, {}]", "ok.json"),
            nlohmann::json::parse("[1, 2.5, \"x\", null, true, {}]"));
  EXPECT_EQ(parse_json_strict("7", "scalar.json"), 7);
}

Config with_lengths(int64_t count, int64_t repeat_at = -1) {
  Config c;
  c.data.dir = "corpus";
  c.eval.lengths.clear();
  for (int64_t i = 0; i < count; ++i) c.eval.lengths.push_back(i + 1);
  if (repeat_at >= 0) c.eval.lengths.push_back(repeat_at + 1);
  return c;
}

TEST(JsonScale, EvalLengthsAreCheckedInOnePassAndCapped) {
  // 999 lengths and a repeat of the 500th after them: found and named; 1,000 are fine.
  const std::string repeat = input_error([] { validate(with_lengths(999, 499)); });
  EXPECT_TRUE(contains(repeat, "eval.lengths[999] (500) repeats eval.lengths[499]")) << repeat;
  EXPECT_EQ(input_error([] { validate(with_lengths(1000)); }), "");
  // 300,000 lengths (21 s before): refused at once for their number.
  std::string many;
  EXPECT_LT(seconds_of([&] { many = input_error([] { validate(with_lengths(300000)); }); }), 2.0);
  EXPECT_TRUE(contains(many, "eval.lengths lists 300000 lengths; at most 1000")) << many;
}

}  // namespace
}  // namespace txl
