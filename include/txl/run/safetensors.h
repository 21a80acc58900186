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
#include <memory>
#include <string>
#include <vector>

#include "txl/util/byte_source.h"

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

// A dict name -> tensor as torch.save writes it (the zip format PyTorch >= 1.6 reads with
// torch.load, weights_only or not: torch_pickle.h). Reading accepts only such a dict of tensors:
// the legacy (pre-zip) format, which only Python's pickle can read, is refused with the line of
// Python that converts it; nothing in the file is executed (txl's own unpickler,
// torch_pickle.h, knows only tensors and containers).
void write_torch_dict(const std::string& path, const std::vector<NamedTensor>& tensors);

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
