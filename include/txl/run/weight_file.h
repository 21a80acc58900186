// Weight files other programs read: safetensors (the Hugging Face format: no code runs when
// it is read) and the zip archive of `torch.save` holding a dict of named tensors.
//
// Reading: WeightReader takes a file of either format (by its first bytes) and checks every
// part of it before a tensor is made (safetensors.h, torch_pickle.h say what of each).
// Writing: write_safetensors (safetensors.h) and write_torch_dict (torch_save.h), included
// here so that this one header serves what reads or writes weight files.
#pragma once

#include <torch/torch.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "txl/run/named_tensor.h"
#include "txl/run/safetensors.h"
#include "txl/run/torch_save.h"
#include "txl/util/byte_source.h"

namespace txl {

struct WeightFile {
  std::vector<NamedTensor> tensors;             // in the file's order (safetensors: by offset)
  std::map<std::string, std::string> metadata;  // safetensors' __metadata__; empty for .pt
};

// A weight file opened for reading, its header (safetensors) or pickle (torch.save) read and
// checked but no tensor: index() describes every tensor (name, shape, dtype, as tensors on the
// meta device, which hold no values), so a caller compares them with a model before a byte of
// them is read, and read(i) then reads one tensor's own bytes. What a file costs is its header
// and the tensors asked for, never its declared size (issue 54, causes 1 and 2). By the file's
// first bytes: a zip archive is torch.save's, anything else safetensors.
class WeightReader {
 public:
  explicit WeightReader(std::unique_ptr<ByteSource> source);
  const std::string& path() const { return source_->name(); }
  const ByteSource& source() const { return *source_; }
  const std::vector<NamedTensor>& index() const { return index_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // Tensor index()[i] as a contiguous CPU tensor.
  torch::Tensor read(size_t i) const;

 private:
  std::unique_ptr<ByteSource> source_;
  std::vector<TensorLocation> locations_;
  std::vector<NamedTensor> index_;
  std::map<std::string, std::string> metadata_;
};

WeightReader open_weight_file(const std::string& path);

// Every tensor read: for files of known size (tests, export's round trip).
WeightFile read_weight_file(const std::string& path);
// The same for a file already in memory (`path` names it in messages).
WeightFile parse_weight_file(const std::string& bytes, const std::string& path);

}  // namespace txl
