// The state dict in a torch.save zip archive, read by txl's own restricted unpickler: only the
// opcodes torch.save writes and only the globals a dict of tensors needs
// (collections.OrderedDict, torch._utils._rebuild_tensor_v2 / _rebuild_parameter, the
// torch.*Storage types, and the type tag LibTorch's pickle_save puts on a dict); any other global
// is refused by name, so nothing in the file is ever called. (LibTorch's own pickle_load reads an
// OrderedDict as None: a Python state dict would not load through it.) The writer is
// torch_save.h; weight_file.h reads either format.
#pragma once

#include <string>
#include <vector>

#include "txl/run/named_tensor.h"
#include "txl/util/byte_source.h"

namespace txl {

// The tensors of a torch.save archive (`archive`, named in messages by its name()), located
// but not read: where each one's values lie, checked against its storage's record. InputError
// for anything that is not a dict name -> tensor (a nested dict names the key holding the state
// dict), a name given twice, and past the bounds no state dict comes near: a data.pkl over
// 100 MB, more than 2^20 values, values nested more than 32 deep, a compressed record
// (zip_index.h).
std::vector<TensorLocation> read_torch_state_dict(const ByteSource& archive);

}  // namespace txl
