#include "txl/run/train_state.h"

#include <stdexcept>

#include "txl/util/aggregate.h"

namespace txl {

namespace {

using S = TrainState;
constexpr StateRole kProgress = StateRole::kProgress;
constexpr StateRole kIdentity = StateRole::kIdentity;

const std::vector<TrainStateField> kFields = {
    {nullptr, "step", kProgress, &S::step},
    {nullptr, "tokens_seen", kProgress, &S::tokens_seen},
    {nullptr, "stream_position", kProgress, &S::stream_position},
    {nullptr, "best_valid_ppl", kProgress, &S::best_valid_ppl},
    {nullptr, "config", kIdentity, &S::config},
    {nullptr, "vocab_checksum", kIdentity, &S::vocab_checksum},
    {nullptr, "lr", kProgress, &S::lr},
    {nullptr, "skipped_steps", kProgress, &S::skipped_steps},
    {nullptr, "train_tokens", kIdentity, &S::train_tokens},
    {nullptr, "train_checksum", kIdentity, &S::train_checksum},
    {"interval", "loss_sum", kProgress, &S::interval_loss_sum},
    {"interval", "steps", kProgress, &S::interval_steps},
    {"interval", "finite", kProgress, &S::interval_finite},
    {"interval", "seconds", kProgress, &S::interval_seconds},
    {nullptr, "world_size", kIdentity, &S::world_size, /*absent_is_default=*/true},
};
// Fifteen fields in TrainState, fifteen rows above: add a row with every new field.
static_assert(aggregate_field_count<TrainState>() == 15,
              "TrainState gained or lost a field: update kFields in train_state.cpp");

std::string path_of(const TrainStateField& f) {
  return f.section ? std::string(f.section) + "." + f.key : std::string(f.key);
}

uint64_t parse_u64_text(const nlohmann::json& j) {
  const std::string text = j.get<std::string>();
  size_t used = 0;
  const unsigned long long v = std::stoull(text, &used);
  if (used != text.size()) throw std::invalid_argument("not an unsigned integer: " + text);
  return v;
}

// Visits the field's member with its JSON value (write) or reads it (read).
struct Writer {
  const TrainState& s;
  nlohmann::json& out;
  void operator()(int64_t S::*m) const { out = s.*m; }
  void operator()(double S::*m) const { out = s.*m; }
  void operator()(uint64_t S::*m) const { out = std::to_string(s.*m); }
  void operator()(nlohmann::json S::*m) const { out = s.*m; }
};

struct Reader {
  TrainState& s;
  const nlohmann::json& in;
  const std::string& path;
  void operator()(int64_t S::*m) const {
    const int64_t v = in.get<int64_t>();
    if (v < 0) throw std::invalid_argument(path + " is negative");
    s.*m = v;
  }
  void operator()(double S::*m) const { s.*m = in.get<double>(); }
  void operator()(uint64_t S::*m) const { s.*m = parse_u64_text(in); }
  void operator()(nlohmann::json S::*m) const { s.*m = in; }
};

struct Copier {
  TrainState& into;
  const TrainState& from;
  template <class T>
  void operator()(T S::*m) const {
    into.*m = from.*m;
  }
};

}  // namespace

const std::vector<TrainStateField>& train_state_fields() { return kFields; }

void write_train_state(const TrainState& state, nlohmann::json& meta) {
  for (const auto& f : kFields) {
    nlohmann::json& slot = f.section ? meta[f.section][f.key] : meta[f.key];
    std::visit(Writer{state, slot}, f.member);
  }
}

TrainState read_train_state(const nlohmann::json& meta) {
  TrainState s;
  for (const auto& f : kFields) {
    const nlohmann::json& scope = f.section ? meta.at(f.section) : meta;
    if (f.absent_is_default && !scope.contains(f.key)) continue;
    const nlohmann::json& value = scope.at(f.key);
    std::visit(Reader{s, value, path_of(f)}, f.member);
  }
  return s;
}

void restore_progress(TrainState& into, const TrainState& saved) {
  for (const auto& f : kFields) {
    if (f.role == StateRole::kProgress) std::visit(Copier{into, saved}, f.member);
  }
}

}  // namespace txl
