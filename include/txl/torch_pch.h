// Precompiled header for every LibTorch translation unit: the torch headers take
// 12-18 s per file to parse on our 2-core machines (shared/NOTES.md section 6).
#pragma once
#include <torch/torch.h>
