// The one decision every command makes per length (request_unavailable, protocol.h): a
// request is evaluated, n/a with the reason (a fact of the run), or refused (an option to
// change), and the learned-table rule behind it is written in one place.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "test_util.h"
#include "txl/config/encodings.h"
#include "txl/eval/protocol.h"
#include "txl/eval/protocols/sliding.h"
#include "txl/probe/probe.h"
#include "txl/util/text.h"

namespace txl {
namespace {

ModelConfig model_with(PosEncoding encoding) {
  ModelConfig m;
  m.pos_encoding = encoding;
  if (encoding == PosEncoding::kLearnedAbsolute) m.encoding_options["max_len"] = 16;
  return m;
}

EvalRequest request(const std::string& protocol, int64_t length) {
  EvalRequest r;
  r.protocol = protocol;
  r.length = length;
  r.batch_tokens = 64;
  return r;
}

TEST(LengthDecision, EachRequestIsEvaluatedNotApplicableOrRefused) {
  const ModelConfig relative = model_with(PosEncoding::kRelative);
  const ModelConfig absolute = model_with(PosEncoding::kAbsolute);
  const ModelConfig table = model_with(PosEncoding::kLearnedAbsolute);
  const ModelConfig rope = model_with(PosEncoding::kRope);

  // Evaluated.
  EXPECT_EQ(request_unavailable(relative, request("nonoverlap", 8)), "");
  EXPECT_EQ(request_unavailable(table, request("nonoverlap", 16)), "");
  auto stretched = request("nonoverlap", 64);
  stretched.aid = ExtrapolationAid::kInterpolate;
  EXPECT_EQ(request_unavailable(table, stretched), "");

  // n/a, with the reason: facts of the run.
  for (const auto& p : eval_protocols()) {
    if (!p.needs_memory) continue;
    EXPECT_NE(request_unavailable(absolute, request(p.name, 8)).find("absolute carries no memory"),
              std::string::npos)
        << p.name;
  }
  auto yarn = request("nonoverlap", 8);
  yarn.aid = ExtrapolationAid::kYarn;
  EXPECT_NE(request_unavailable(relative, yarn).find("--aid yarn does not apply"),
            std::string::npos);
  EXPECT_EQ(request_unavailable(table, request("nonoverlap", 17)).find("past the 16 positions"),
            0u);
  stretched.aid_factor = 2;  // 63 / 2 lands past row 15
  EXPECT_NE(request_unavailable(table, stretched).find("maps length 64 past the 16 positions"),
            std::string::npos);

  // Refused: options to change whatever the run.
  testing::expect_input_error([&] { request_unavailable(relative, request("nonoverlap", 0)); },
                              {"positive integer", "0"});
  auto wide = request("sliding", 8);
  wide.settings.set(sliding_setting::kStride, 9);
  testing::expect_input_error([&] { request_unavailable(relative, wide); }, {"--stride", "9"});
  auto clamped = request("nonoverlap", 8);
  clamped.clamp_len = 4;
  testing::expect_input_error([&] { request_unavailable(rope, clamped); },
                              {"--clamp-len 4", "rope", "leave --clamp-len out"});
  auto factor = request("nonoverlap", 8);
  factor.aid = ExtrapolationAid::kPi;
  factor.aid_factor = 0.5;
  testing::expect_input_error([&] { request_unavailable(rope, factor); }, {"--aid-factor"});
}

TEST(LengthDecision, WindowPastTableIsTheTablesRule) {
  const ModelConfig table = model_with(PosEncoding::kLearnedAbsolute);
  EXPECT_EQ(window_past_table(table, 16), "");
  EXPECT_EQ(window_past_table(table, 17),
            "past the 16 positions of learned_absolute (model.max_len)");
  EXPECT_EQ(request_unavailable(table, request("nonoverlap", 17)),
            "past the 16 positions of learned_absolute (model.max_len), which --aid interpolate "
            "stretches");
  for (const auto& traits : encoding_registry()) {
    if (traits.length_limit_key) continue;
    EXPECT_EQ(window_past_table(model_with(traits.id), int64_t{1} << 40), "") << traits.name;
  }
}

TEST(LengthDecision, SkippedReasonsGroupTheLengthsEachReasonHoldsFor) {
  EXPECT_EQ(skipped_reasons({32, 128, 256, 512}, {"", "past", "aid", "past"}),
            "past (lengths 128, 512); aid (length 256)");
  EXPECT_EQ(skipped_reasons({32}, {""}), "");
}

// A probe defaults to the lengths eval evaluates: one past the table is n/a there and no
// probe's default here; asked for explicitly (or when every length is past), it is refused.
TEST(LengthDecision, ProbesDefaultToTheLengthsTheEncodingTakes) {
  Config config;
  config.model = model_with(PosEncoding::kLearnedAbsolute);  // 16 positions
  config.train.tgt_len = 8;
  const std::vector<int32_t> ids(256, 1);
  ProbeSubject subject;
  subject.config = &config;
  subject.ids = &ids;
  subject.lengths = {8, 16, 32};
  EXPECT_EQ(default_lengths(subject), (std::vector<int64_t>{8, 16}));
  EXPECT_EQ(longest_length(subject), 16);
  const Probe& attention = find_probe("attention", "--probes");
  EXPECT_EQ(attention.defaults(subject).integers("lengths"), (std::vector<int64_t>{8, 16}));

  ProbeValues asked = attention.defaults(subject);
  asked.values["lengths"] = {32};
  testing::expect_input_error([&] { attention.check(subject, asked); },
                              {"attention.lengths", "past the 16 positions"});
  subject.lengths = {32, 64};
  EXPECT_EQ(default_lengths(subject), subject.lengths);
  testing::expect_input_error([&] { attention.check(subject, attention.defaults(subject)); },
                              {"attention.lengths", "64", "past the 16 positions"});
}

// The learned-table rule is asked of request_unavailable or window_past_table: only they,
// the traits that define the limit and the model's own guard read position_limit.
TEST(LengthDecision, TheLearnedTableRuleIsWrittenOnce) {
  const std::set<std::string> allowed = {
      "src/config/encodings.cpp",  // defines it
      "include/txl/config/encodings.h",
      "src/eval/request_check.cpp",  // the decision
      "src/model/transformer.cpp",   // the forward pass's guard against a caller that skipped it
  };
  const auto found =
      testing::find_in_sources([&](const std::string& file, const std::string& line) {
        return !allowed.count(file) && line.find("position_limit(") != std::string::npos;
      });
  EXPECT_TRUE(found.empty()) << "ask request_unavailable or window_past_table instead:\n"
                             << join(found, "\n");
}

}  // namespace
}  // namespace txl
