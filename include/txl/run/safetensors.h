// safetensors, the Hugging Face weight format (no code runs when it is read); weight_file.h
// reads it or torch.save's archive, whichever a file holds.
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

#include <map>
#include <string>
#include <vector>

#include "txl/run/named_tensor.h"
#include "txl/util/byte_source.h"

namespace txl {

// A header past this is not a weight file's (a 267k-word model's header is about 20 kB).
inline constexpr uint64_t kMaxHeaderBytes = uint64_t{100} << 20;

// The tensors (copied to contiguous CPU memory) in the given order, header padded to a
// multiple of 8 bytes; written atomically (util/fs.h). InputError for a name given twice.
void write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata);

// The header of `source` read and checked, the data's ranges tiled: where each tensor lies
// (its __metadata__ into `metadata`); no tensor's data read.
std::vector<TensorLocation> locate_safetensors(const ByteSource& source,
                                               std::map<std::string, std::string>& metadata);

}  // namespace txl
