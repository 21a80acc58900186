// What an encoding's traits file (src/model/encodings/<name>_traits.cpp) is written with:
// the declaration of every encoding's traits function, one per line of encoding_list.h,
// and the small functions several of them share. The traits files are torch-free and built
// into txl_base (CMakeLists.txt), so they include only config/ and util/ headers; the
// registry (encodings.cpp) calls them in the list's order.
#pragma once

#include "txl/config/encodings.h"

namespace txl {

#define TXL_ENCODING(id, name) EncodingTraits name##_traits();
#include "txl/config/encoding_list.h"

// layer_parameters or model_parameters of an encoding that adds none there.
inline double none(const ModelConfig& /*c*/) { return 0.0; }

// cost of an encoding whose positions take no multiply-accumulates beyond q.k and p.v.
inline PositionCost no_cost(const ModelConfig& /*c*/, double /*b*/, double /*q*/, double /*k*/) {
  return {};
}

// The traits an encoding's file starts from: its id, name and formula, adding no parameters
// and no multiply-accumulates until the file says otherwise.
inline EncodingTraits encoding_named(PosEncoding id, const char* name, const char* formula) {
  EncodingTraits t{};
  t.id = id;
  t.name = name;
  t.formula = formula;
  t.layer_parameters = none;
  t.model_parameters = none;
  t.cost = no_cost;
  return t;
}

// H * D, the width of all heads together.
inline double hd(const ModelConfig& c) { return static_cast<double>(c.n_head * c.d_head); }

}  // namespace txl
