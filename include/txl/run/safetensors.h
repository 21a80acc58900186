// Weight files other programs read: safetensors (the Hugging Face format: no code runs when
// it is read) and the zip archive of `torch.save` holding a dict of named tensors.
//
// safetensors, as its specification lays it out (integers little-endian):
//   bytes 0..7   N, the header's length (u64)
//         8..    N bytes of JSON: {name: {"dtype": "F32", "shape": [..], "data_offsets": [b, e]},
//                ..., "__metadata__": {string: string}}, padded with spaces
//         8+N..  the data: every tensor row-major, little-endian, at [b, e) counted from here;
//                the tensors cover the data exactly (no overlap, no gap, nothing after).
// Every part of a file is checked before a tensor is made: a header length past the file or
// larger than kMaxHeaderBytes, JSON that is not such an object (a key twice included), an
// unknown dtype, a shape that does not match its byte range, overlapping, out-of-range or
// gapped ranges: InputError naming the file and the tensor.
#pragma once

#include <torch/torch.h>

#include <map>
#include <string>
#include <vector>

namespace txl {

struct NamedTensor {
  std::string name;
  torch::Tensor tensor;
};

struct WeightFile {
  std::vector<NamedTensor> tensors;             // in the file's order (safetensors: by offset)
  std::map<std::string, std::string> metadata;  // safetensors' __metadata__; empty for .pt
};

// A header past this is not a weight file's (a 267k-word model's header is about 20 kB).
inline constexpr uint64_t kMaxHeaderBytes = uint64_t{100} << 20;

// The tensors (copied to contiguous CPU memory) in the given order, header padded to a
// multiple of 8 bytes; written atomically (util/fs.h). InputError for a name given twice.
void write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata);
WeightFile read_safetensors(const std::string& path);

// A dict name -> tensor as torch.save writes it (the zip format PyTorch >= 1.6 reads with
// torch.load, weights_only or not: torch_pickle.h). Reading accepts only such a dict of tensors:
// the legacy (pre-zip) format, which only Python's pickle can read, is refused with the line of
// Python that converts it; nothing in the file is executed (LibTorch's unpickler knows only
// tensors and containers).
void write_torch_dict(const std::string& path, const std::vector<NamedTensor>& tensors);
WeightFile read_torch_dict(const std::string& path);

// By the file's first bytes: a zip archive is read as torch.save's, anything else as
// safetensors.
WeightFile read_weight_file(const std::string& path);
// The same for a file already read (`path` names it in messages).
WeightFile parse_weight_file(const std::string& bytes, const std::string& path);

}  // namespace txl
