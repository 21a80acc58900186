// The state dict in a torch.save zip archive, read by txl's own restricted unpickler: only the
// opcodes torch.save writes and only the globals a dict of tensors needs
// (collections.OrderedDict, torch._utils._rebuild_tensor_v2 / _rebuild_parameter, the
// torch.*Storage types, and the type tag LibTorch's pickle_save puts on a dict); any other global
// is refused by name, so nothing in the file is ever called. (LibTorch's own pickle_load reads an
// OrderedDict as None: a Python state dict would not load through it.)
#pragma once

#include <string>
#include <vector>

#include "txl/run/safetensors.h"

namespace txl {

// `bytes`: the whole archive; `path` names it in messages. InputError for anything that is
// not a dict name -> tensor (a nested dict names the key holding the state dict).
std::vector<NamedTensor> read_torch_state_dict(const std::string& bytes, const std::string& path);

// The archive torch.save writes for a plain dict name -> tensor (pickle protocol 2: the dict,
// _rebuild_tensor_v2 calls, storages as data/<key> records, byteorder "little"): only globals
// that PyTorch's weights_only loader allows, so torch.load reads it with its default
// weights_only=True (PyTorch >= 2.6), unlike LibTorch's pickle_save, whose dict carries a
// TorchScript type tag that loader refuses.
std::string torch_state_dict_bytes(const std::vector<NamedTensor>& tensors);

}  // namespace txl
