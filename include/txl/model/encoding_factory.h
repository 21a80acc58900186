// How an encoding's modules are built from the model config: one factory per line of
// config/encoding_list.h, defined beside the modules it builds (rope_factory() in
// src/model/encodings/rope.cpp, ...). encoding_registry.cpp gathers them in the list's order
// for make_position_score and make_position_input (position_score.h).
#pragma once

#include <functional>
#include <memory>

#include "txl/config/config.h"
#include "txl/model/position_score.h"

namespace txl {

struct EncodingFactory {
  std::function<std::shared_ptr<PositionScoreImpl>(const ModelConfig&)> score;
  // nullptr: the encoding adds nothing at the input (PositionInputImpl's default).
  std::function<std::shared_ptr<PositionInputImpl>(const ModelConfig&)> input;
};

#define TXL_ENCODING(id, name) EncodingFactory name##_factory();
#include "txl/config/encoding_list.h"

// The score of an encoding whose positions live at the input or nowhere: q . k alone
// (ContentScore).
std::shared_ptr<PositionScoreImpl> content_score(const ModelConfig& config);

}  // namespace txl
