// The factory table: how each encoding of config/encoding_list.h is built, from the factory
// beside its modules (encoding_factory.h), in the list's order.
#include <vector>

#include "txl/config/encodings.h"
#include "txl/model/encoding_factory.h"
#include "txl/model/position_score.h"

namespace txl {

std::shared_ptr<PositionScoreImpl> content_score(const ModelConfig& /*config*/) {
  return std::make_shared<ContentScore>();
}

namespace {

struct ListedFactory {
  PosEncoding id;
  EncodingFactory factory;
};

const std::vector<ListedFactory>& factories() {
  static const std::vector<ListedFactory> table = {
#define TXL_ENCODING(id, name) {PosEncoding::id, name##_factory()},
#include "txl/config/encoding_list.h"
  };
  return table;
}

const EncodingFactory& factory(PosEncoding encoding) {
  for (const auto& f : factories()) {
    if (f.id == encoding) return f.factory;
  }
  TORCH_CHECK(false, "position encoding ", static_cast<int>(encoding),
              " is not in config/encoding_list.h");
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
