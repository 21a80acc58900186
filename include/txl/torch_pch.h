// Precompiled header for every LibTorch translation unit: the torch headers take
// 12-18 s per file to parse on the project's 2-core machines (docs/machines.md).
#pragma once
#include <torch/torch.h>
