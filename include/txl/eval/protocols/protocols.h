// The registered evaluation protocols, one file each in src/eval/protocols/. Only the
// registry (src/eval/protocol.cpp) includes this; everything else asks eval_protocol().
#pragma once

#include "txl/eval/protocol.h"

namespace txl {

EvalProtocol nonoverlap_protocol();  // nonoverlap.cpp
EvalProtocol sliding_protocol();     // sliding.cpp
EvalProtocol memory_protocol();      // memory.cpp

}  // namespace txl
