// The factory table: how each encoding of config/encodings.h is built. One line per
// encoding; an encoding without an input part (or with only the content score) uses the
// defaults.
#include <functional>
#include <vector>

#include "txl/config/encodings.h"
#include "txl/model/encodings/absolute.h"
#include "txl/model/encodings/relative.h"
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
         return std::make_shared<SinusoidRelativeScore>(c.d_model, c.n_head, c.d_head,
                                                        c.init_std);
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
