// The one table of TrainState's fields: it covers the struct, every field survives the
// checkpoint's meta JSON, and a resume restores the progress fields and nothing else.
#include "txl/run/train_state.h"

#include <gtest/gtest.h>

#include <string>
#include <variant>

#include "txl/util/aggregate.h"

namespace txl {
namespace {

using S = TrainState;

// Gives field number `i` a value that no other field has and that no default equals.
struct SetDistinct {
  TrainState& s;
  int i;
  void operator()(int64_t S::*m) const { s.*m = 1000 + i; }
  void operator()(double S::*m) const { s.*m = 0.5 + i; }
  void operator()(uint64_t S::*m) const { s.*m = 0xF000000000000000ull + static_cast<uint64_t>(i); }
  void operator()(nlohmann::json S::*m) const { s.*m = nlohmann::json{{"field", i}}; }
};

struct Same {
  const TrainState& a;
  const TrainState& b;
  template <class T>
  bool operator()(T S::*m) const {
    return a.*m == b.*m;
  }
};

TrainState all_distinct() {
  TrainState s;
  int i = 0;
  for (const auto& f : train_state_fields()) std::visit(SetDistinct{s, i++}, f.member);
  return s;
}

TEST(TrainStateFields, TheTableHasARowForEveryFieldOfTheStruct) {
  EXPECT_EQ(train_state_fields().size(), aggregate_field_count<TrainState>());
}

TEST(TrainStateFields, EveryFieldSurvivesTheMetaJson) {
  const TrainState saved = all_distinct();
  nlohmann::json meta = nlohmann::json::object();
  write_train_state(saved, meta);
  const TrainState read = read_train_state(nlohmann::json::parse(meta.dump()));
  for (const auto& f : train_state_fields()) {
    EXPECT_TRUE(std::visit(Same{saved, read}, f.member)) << f.key;
  }
  // The version-2 layout: 64-bit checksums as text, the interval sums nested.
  EXPECT_TRUE(meta.at("vocab_checksum").is_string());
  EXPECT_EQ(meta.at("interval").size(), 4u);
}

TEST(TrainStateFields, ResumeRestoresProgressAndKeepsIdentity) {
  const TrainState saved = all_distinct();
  TrainState fresh;  // what a resumed run computes itself: its identity, no progress
  const TrainState before = fresh;
  restore_progress(fresh, saved);
  for (const auto& f : train_state_fields()) {
    const bool progress = f.role == StateRole::kProgress;
    EXPECT_TRUE(std::visit(Same{fresh, progress ? saved : before}, f.member))
        << f.key << (progress ? " should come from the checkpoint" : " should stay the run's own");
  }
}

TEST(TrainStateFields, NegativeCountsAndMissingKeysAreRefusedNamingTheKey) {
  nlohmann::json meta = nlohmann::json::object();
  write_train_state(all_distinct(), meta);
  auto bad = meta;
  bad["interval"]["steps"] = -1;
  try {
    read_train_state(bad);
    FAIL() << "a negative count was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("interval.steps"), std::string::npos) << e.what();
  }
  auto missing = meta;
  missing.erase("lr");
  EXPECT_ANY_THROW(read_train_state(missing));
}

}  // namespace
}  // namespace txl
