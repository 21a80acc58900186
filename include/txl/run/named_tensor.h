// What a weight file holds, the base of its formats (weight_file.h reads either; safetensors.h,
// torch_pickle.h and torch_save.h are the formats): a tensor by name, and where a tensor's
// values lie in a file before they are read.
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

namespace txl {

struct NamedTensor {
  std::string name;
  torch::Tensor tensor;
};

// Where a tensor's values lie in a weight file: a record of `record_bytes` bytes at byte
// `record_at`, read as `dtype` from element `offset` with `strides` (a safetensors tensor is its
// own record, row-major; a torch.save tensor is a view of its storage's record).
struct TensorLocation {
  std::string name;
  torch::Dtype dtype = torch::kFloat32;
  std::vector<int64_t> sizes, strides;
  int64_t offset = 0;
  uint64_t record_at = 0, record_bytes = 0;
};

// What both writers refuse (`path` names the file in the message): a tensor without a name,
// or a name given twice (InputError).
void check_unique_names(const std::vector<NamedTensor>& tensors, const std::string& path);

}  // namespace txl
