// The encodings' traits table and how the configuration reads encoding options: every
// option belongs to one encoding, has its default inside its range, is accepted only with
// its encoding (exit-2 message naming key and encodings), range-checked, settable with
// --set and written resolved.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "txl/config/config.h"
#include "txl/config/encodings.h"
#include "txl/util/error.h"
#include "txl/util/text.h"

namespace txl {
namespace {

using nlohmann::json;

std::string error_of(const json& j) {
  try {
    config_from_json(j, "cfg.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

json with_model(const json& model) {
  return {{"data", {{"dir", "d"}}}, {"model", model}, {"train", {{"mem_len", 0}}}};
}

TEST(EncodingTraitsTable, NamesAndOptionKeysAreUniqueAndDefaultsInRange) {
  std::set<std::string> names, keys;
  for (const auto& t : encoding_registry()) {
    EXPECT_TRUE(names.insert(t.name).second) << t.name;
    EXPECT_NE(std::string(t.formula), "") << t.name;
    EXPECT_EQ(&encoding_traits(t.id), &t);
    for (const auto& o : t.options) {
      EXPECT_TRUE(keys.insert(o.key).second) << o.key << " is used by two encodings";
      EXPECT_GE(o.default_value, o.min) << o.key;
      EXPECT_LE(o.default_value, o.max) << o.key;
      EXPECT_EQ(encoding_with_option(o.key), &t);
    }
    if (t.length_limit_key) EXPECT_NE(find_encoding_option(t, t.length_limit_key), nullptr);
    // A default config of every encoding (without memory where it takes none) is valid.
    json j = with_model({{"pos_encoding", t.name}});
    EXPECT_NO_THROW(config_from_json(j, "cfg.json")) << t.name;
  }
}

TEST(EncodingOptions, ResolvedConfigHoldsTheChosenEncodingsOptionsOnly) {
  const auto c = config_from_json(with_model({{"pos_encoding", "rope"}}), "cfg.json");
  EXPECT_DOUBLE_EQ(encoding_option(c.model, "rope_base"), 10000.0);
  const json resolved = config_to_json(c);
  EXPECT_EQ(resolved["model"]["rope_base"], 10000.0);
  EXPECT_FALSE(resolved["model"].contains("t5_buckets"));
  // Written and read back: the same model.
  const auto back = config_from_json(resolved, "resolved.json");
  EXPECT_EQ(config_to_json(back), resolved);
  const auto t5 = config_to_json(
      config_from_json(with_model({{"pos_encoding", "t5"}, {"t5_buckets", 16}}), "cfg.json"));
  EXPECT_EQ(t5["model"]["t5_buckets"], 16);
  EXPECT_TRUE(t5["model"]["t5_buckets"].is_number_integer());
  EXPECT_EQ(t5["model"]["t5_max_distance"], 128);
}

TEST(EncodingOptions, AnOptionOfAnotherEncodingIsRefusedNamingBoth) {
  const auto message = error_of(with_model({{"pos_encoding", "alibi"}, {"rope_base", 500}}));
  EXPECT_NE(message.find("cfg.json: model.rope_base is an option of pos_encoding rope"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("model.pos_encoding is alibi"), std::string::npos) << message;
  // The order of keys in the file does not matter.
  const auto reversed = error_of(with_model({{"rope_base", 500}, {"pos_encoding", "t5"}}));
  EXPECT_NE(reversed.find("t5's options: t5_buckets, t5_max_distance"), std::string::npos)
      << reversed;
}

TEST(EncodingOptions, RangeAndTypeAreChecked) {
  const auto range = error_of(with_model({{"pos_encoding", "rope"}, {"rope_base", 1}}));
  EXPECT_NE(range.find("model.rope_base (1) must be in [2, "), std::string::npos) << range;
  EXPECT_NE(range.find("for pos_encoding rope"), std::string::npos) << range;
  EXPECT_NE(error_of(with_model({{"pos_encoding", "t5"}, {"t5_buckets", 2.5}}))
                .find("model.t5_buckets must be an integer"),
            std::string::npos);
  EXPECT_NE(error_of(with_model({{"pos_encoding", "rope"}, {"rope_base", "big"}}))
                .find("model.rope_base must be a number"),
            std::string::npos);
  // Unknown keys still list the options among the valid keys.
  const auto unknown = error_of(with_model({{"rope_bas", 2}}));
  EXPECT_NE(unknown.find("did you mean \"rope_base\""), std::string::npos) << unknown;
}

TEST(EncodingOptions, SetOverridesReachOptions) {
  json j = with_model({{"pos_encoding", "rope"}});
  apply_override(j, "model.rope_base=500000");
  EXPECT_DOUBLE_EQ(encoding_option(config_from_json(j, "cfg.json").model, "rope_base"), 500000.0);
  try {
    apply_override(j, "model.t5_buckets=many");
    FAIL() << "a non-number was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--set model.t5_buckets=many"), std::string::npos)
        << e.what();
  }
}

TEST(EncodingTraitsTable, MemoryRuleComesFromTheTraits) {
  for (const auto& t : encoding_registry()) {
    json j = {{"data", {{"dir", "d"}}},
              {"model", {{"pos_encoding", t.name}}},
              {"train", {{"mem_len", 8}}}};
    const auto message = error_of(j);
    if (t.takes_memory) {
      EXPECT_EQ(message, "(no error)") << t.name;
    } else {
      EXPECT_NE(message.find("requires train.mem_len = 0"), std::string::npos) << message;
      EXPECT_NE(message.find(t.name), std::string::npos) << message;
    }
  }
}

// bucket(n) divides by ln(t5_max_distance / E), E = t5_buckets / 2: the pair is checked
// together, naming both keys, and the first value that passes is E + 1 (core tests train
// and evaluate a model at that boundary, t5_boundary in train_eval_test).
TEST(EncodingOptions, T5MaxDistanceMustExceedHalfTheBucketsNamingBoth) {
  for (const int64_t buckets : {2, 3, 8, 31, 32, 4096}) {
    const int64_t exact = buckets / 2;
    const auto at = [&](int64_t max_distance) {
      json model = {
          {"pos_encoding", "t5"}, {"t5_buckets", buckets}, {"t5_max_distance", max_distance}};
      json j = with_model(model);
      j["train"]["mem_len"] = 8;
      return error_of(j);
    };
    EXPECT_EQ(at(exact + 1), "(no error)") << buckets;
    if (exact >= 2) {  // t5_max_distance's own range starts at 2
      const std::string message = at(exact);
      EXPECT_NE(message.find("cfg.json: model.t5_max_distance (" + std::to_string(exact) +
                             ") must be greater than model.t5_buckets / 2 (" +
                             std::to_string(buckets) + " / 2 = " + std::to_string(exact) + ")"),
                std::string::npos)
          << message;
      EXPECT_NE(message.find("at least " + std::to_string(exact + 1)), std::string::npos)
          << message;
    }
  }
}

// model.clamp_len and model.max_rel_dist, shared keys: given (other than at their defaults)
// to an encoding whose traits say it ignores them, they are refused naming the key, the
// encoding and those that read it; every run's config.json holds them at their defaults.
TEST(EncodingOptions, SharedKeysAreRefusedWithAnEncodingThatIgnoresThem) {
  struct Shared {
    const char* key;
    int64_t value, fallback;
    bool EncodingTraits::*reads;
  };
  for (const Shared& k : {Shared{"clamp_len", 8, 0, &EncodingTraits::uses_clamp_len},
                          Shared{"max_rel_dist", 64, 512, &EncodingTraits::uses_max_rel_dist}}) {
    for (const auto& t : encoding_registry()) {
      json j = with_model({{"pos_encoding", t.name}, {k.key, k.value}});
      const std::string message = error_of(j);
      if (t.*k.reads) {
        EXPECT_EQ(message, "(no error)") << t.name << " " << k.key;
      } else {
        EXPECT_NE(message.find(std::string("model.") + k.key + " (" + std::to_string(k.value) +
                               ") is read by pos_encoding " + join(encoding_names_where(k.reads)) +
                               ", but model.pos_encoding is " + t.name),
                  std::string::npos)
            << message;
      }
      j["model"][k.key] = k.fallback;  // the default, as config.json records it
      EXPECT_EQ(error_of(j), "(no error)") << t.name << " " << k.key;
    }
  }
  // The resolved config of an encoding that ignores them reads back.
  const auto rope = config_from_json(with_model({{"pos_encoding", "rope"}}), "cfg.json");
  EXPECT_NO_THROW(config_from_json(config_to_json(rope), "config.json"));
}

TEST(EncodingOptions, ALearnedTableMustHoldATrainingSegment) {
  json j = with_model({{"pos_encoding", "learned_absolute"}, {"max_len", 64}});
  j["train"]["tgt_len"] = 64;
  EXPECT_EQ(error_of(j), "(no error)");
  j["train"]["tgt_len"] = 65;
  std::string message = error_of(j);
  EXPECT_NE(message.find("cfg.json: model.max_len (64) must be at least train.tgt_len (65)"),
            std::string::npos)
      << message;
  j["train"]["tgt_len"] = 32;
  j["train"]["tgt_len_max"] = 100;
  message = error_of(j);
  EXPECT_NE(message.find("model.max_len (64) must be at least train.tgt_len_max (100)"),
            std::string::npos)
      << message;
}

TEST(ExtrapolationAid, NamesRoundTripAndDerivedScale) {
  for (const auto& name : extrapolation_aid_names()) {
    EXPECT_EQ(to_string(parse_extrapolation_aid(name, "--aid")), name);
  }
  EXPECT_THROW(parse_extrapolation_aid("rope_scaling", "--aid"), InputError);
  // Static: from the evaluated length; dynamic: from the pass's keys; never below 1.
  EXPECT_DOUBLE_EQ(aid_scale(ExtrapolationAid::kPi, 0, 512, 300, 128), 4.0);
  EXPECT_DOUBLE_EQ(aid_scale(ExtrapolationAid::kDynamicNtk, 0, 512, 256, 128), 2.0);
  EXPECT_DOUBLE_EQ(aid_scale(ExtrapolationAid::kYarn, 0, 64, 64, 128), 1.0);
  EXPECT_DOUBLE_EQ(aid_scale(ExtrapolationAid::kYarn, 3, 64, 64, 128), 3.0);
  EXPECT_DOUBLE_EQ(aid_scale(ExtrapolationAid::kNone, 3, 512, 512, 128), 1.0);
  // interpolate maps positions 0..L-1 onto rows 0..max_len-1.
  EXPECT_DOUBLE_EQ(aid_scale(ExtrapolationAid::kInterpolate, 0, 129, 129, 65), 2.0);
}

}  // namespace
}  // namespace txl
