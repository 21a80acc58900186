// torch.save's zip archive for a dict name -> tensor, written by txl: the pickle opcodes by
// hand and the zip by LibTorch's stream writer (torch_save.cpp), not LibTorch's own
// pickle_save (below: why). The unpickler that reads such archives is torch_pickle.h;
// weight_file.h reads either format.
#pragma once

#include <string>
#include <vector>

#include "txl/run/named_tensor.h"

namespace txl {

// The archive torch.save writes for a plain dict name -> tensor (pickle protocol 2: the dict,
// _rebuild_tensor_v2 calls, storages as data/<key> records, byteorder "little"): only globals
// that PyTorch's weights_only loader allows, so torch.load reads it with its default
// weights_only=True (PyTorch >= 2.6), unlike LibTorch's pickle_save, whose dict carries a
// TorchScript type tag that loader refuses.
std::string torch_state_dict_bytes(const std::vector<NamedTensor>& tensors);

// A dict name -> tensor as torch.save writes it (the zip format PyTorch >= 1.6 reads with
// torch.load, weights_only or not: torch_pickle.h). Reading accepts only such a dict of tensors:
// the legacy (pre-zip) format, which only Python's pickle can read, is refused with the line of
// Python that converts it; nothing in the file is executed (txl's own unpickler,
// torch_pickle.h, knows only tensors and containers).
void write_torch_dict(const std::string& path, const std::vector<NamedTensor>& tensors);

}  // namespace txl
