// The factory table: how each encoding of config/encodings.h is built. One line per
// encoding; an encoding without an input part (or with only the content score) uses the
// defaults.
#include <functional>
#include <vector>

#include "txl/config/encodings.h"
#include "txl/model/encodings/absolute.h"
#include "txl/model/encodings/alibi.h"
#include "txl/model/encodings/fire.h"
#include "txl/model/encodings/kerple.h"
#include "txl/model/encodings/learned_absolute.h"
#include "txl/model/encodings/relative.h"
#include "txl/model/encodings/rope.h"
#include "txl/model/encodings/t5.h"
#include "txl/model/position_score.h"

namespace txl {

namespace {

using ScoreFactory = std::function<std::shared_ptr<PositionScoreImpl>(const ModelConfig&)>;
using InputFactory = std::function<std::shared_ptr<PositionInputImpl>(const ModelConfig&)>;

struct EncodingFactory {
  PosEncoding id;
  ScoreFactory score;
  InputFactory input;  // nullptr: adds nothing at the input
};

std::shared_ptr<PositionScoreImpl> content(const ModelConfig& /*c*/) {
  return std::make_shared<ContentScore>();
}

const std::vector<EncodingFactory>& factories() {
  static const std::vector<EncodingFactory> table = {
      {PosEncoding::kRelative,
       [](const ModelConfig& c) {
         return std::make_shared<SinusoidRelativeScore>(c.d_model, c.n_head, c.d_head, c.init_std);
       },
       [](const ModelConfig& c) {
         return std::make_shared<RelativeSinusoidInput>(c.d_model, c.dropout);
       }},
      {PosEncoding::kAbsolute, content,
       [](const ModelConfig& c) { return std::make_shared<AbsoluteSinusoidInput>(c.d_model); }},
      {PosEncoding::kRelativeLearned,
       [](const ModelConfig& c) {
         return std::make_shared<LearnedRelativeScore>(c.n_head, c.d_head, c.max_rel_dist,
                                                       c.init_std);
       },
       nullptr},
      {PosEncoding::kNope, content, nullptr},
      {PosEncoding::kRope,
       [](const ModelConfig& c) {
         return std::make_shared<RopeScore>(c.d_head, encoding_option(c, "rope_base"));
       },
       nullptr},
      {PosEncoding::kAlibi,
       [](const ModelConfig& c) { return std::make_shared<AlibiScore>(c.n_head); }, nullptr},
      {PosEncoding::kT5,
       [](const ModelConfig& c) {
         return std::make_shared<T5Score>(c.n_head, c.d_head, encoding_option_int(c, "t5_buckets"),
                                          encoding_option_int(c, "t5_max_distance"), c.init_std);
       },
       nullptr},
      {PosEncoding::kKerple,
       [](const ModelConfig& c) { return std::make_shared<KerpleScore>(c.n_head); }, nullptr},
      {PosEncoding::kFire,
       [](const ModelConfig& c) {
         return std::make_shared<FireScore>(c.n_head, encoding_option(c, "fire_threshold"),
                                            c.init_std);
       },
       nullptr},
      {PosEncoding::kLearnedAbsolute, content,
       [](const ModelConfig& c) {
         return std::make_shared<LearnedAbsoluteInput>(encoding_option_int(c, "max_len"), c.d_model,
                                                       c.init_std);
       }},
  };
  return table;
}

const EncodingFactory& factory(PosEncoding encoding) {
  for (const auto& f : factories()) {
    if (f.id == encoding) return f;
  }
  TORCH_CHECK(false, "position encoding ", encoding_traits(encoding).name,
              " has no factory line in encoding_registry.cpp");
}

}  // namespace

std::shared_ptr<PositionScoreImpl> make_position_score(const ModelConfig& config) {
  return factory(config.pos_encoding).score(config);
}

std::shared_ptr<PositionInputImpl> make_position_input(const ModelConfig& config) {
  const auto& f = factory(config.pos_encoding);
  return f.input ? f.input(config) : std::make_shared<PositionInputImpl>();
}

}  // namespace txl
