// The switch for LibTorch's multi-tensor kernels (the fused AdamW, the foreach norm and
// scaling of gradient clipping): on by default where the LibTorch has them;
// TXL_MULTI_TENSOR=0 takes the one-kernel-per-parameter paths instead, to compare the two in
// one build (scripts/gpu_check.sh does).
#pragma once

#include "txl/util/env.h"

namespace txl {

inline bool multi_tensor_enabled() { return !env_is("TXL_MULTI_TENSOR", "0"); }

}  // namespace txl
