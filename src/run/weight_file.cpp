// A weight file of either format opened for reading: the format told by the file's first
// bytes, its index checked before a tensor is read (weight_file.h).
#include "txl/run/weight_file.h"

#include <spdlog/fmt/fmt.h>

#include "txl/run/torch_pickle.h"
#include "txl/util/error.h"
#include "txl/util/text.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "weight files are little-endian; this host is not");

namespace txl {

namespace {

constexpr const char* kZipMagic = "PK\x03\x04";
constexpr const char* kLegacyTorchMagic = "\x80\x02\x8a\x0a";

bool starts_with_bytes(const ByteSource& source, const char* magic, uint64_t n) {
  return source.size() >= n && source.read_string(0, n) == std::string(magic, n);
}

// Every tensor, for files read whole: at most what the file holds, twice (a tied pair of views
// of one storage) and 1 MB over; more is views of views (1,500 of one 4 MB storage made a
// 4.2 MB file cost 6 GB), refused before it is materialised.
WeightFile read_all(const WeightReader& reader) {
  double bytes = 0;
  for (const auto& t : reader.index()) bytes += double(t.tensor.nbytes());
  const double bound = 2.0 * double(reader.source().size()) + double(1 << 20);
  if (bytes > bound) {
    throw InputError(fmt::format(
        "{}: its tensors hold {:.0f} bytes, views of a file of {} bytes; read whole, that is "
        "more than a weight file holds",
        reader.path(), bytes, reader.source().size()));
  }
  WeightFile file;
  file.metadata = reader.metadata();
  for (size_t i = 0; i < reader.index().size(); ++i)
    file.tensors.push_back({reader.index()[i].name, reader.read(i)});
  return file;
}

}  // namespace

WeightReader::WeightReader(std::unique_ptr<ByteSource> source) : source_(std::move(source)) {
  const std::string& path = source_->name();
  const bool pt_name = ends_with(path, ".pt");
  if (starts_with_bytes(*source_, kLegacyTorchMagic, 4)) {
    throw InputError(fmt::format(
        "{}: not a zip archive, so not what torch.save writes since PyTorch 1.6 (the legacy format "
        "only Python's pickle reads); convert it where PyTorch is: python3 -c \"import torch; "
        "torch.save(torch.load('OLD', map_location='cpu'), 'NEW.pt')\"",
        path));
  }
  if (starts_with_bytes(*source_, kZipMagic, 4)) {
    locations_ = read_torch_state_dict(*source_);
  } else if (pt_name && source_->size() < 4) {
    throw InputError(
        fmt::format("{}: {} bytes, not a torch.save archive (a zip)", path, source_->size()));
  } else {
    locations_ = locate_safetensors(*source_, metadata_);
  }
  for (const auto& t : locations_)
    index_.push_back({t.name, torch::empty(t.sizes, torch::TensorOptions().dtype(t.dtype).device(
                                                        torch::kMeta))});
}

torch::Tensor WeightReader::read(size_t i) const {
  const TensorLocation& t = locations_.at(i);
  const auto options = torch::TensorOptions().dtype(t.dtype);
  int64_t numel = 1, last = t.offset;  // bounded when the file was opened
  for (size_t k = 0; k < t.sizes.size(); ++k) {
    numel *= t.sizes[k];
    last += (t.sizes[k] - 1) * t.strides[k];
  }
  if (numel == 0) return torch::empty(t.sizes, options);
  // Only the span of the record that the tensor views is read.
  const int64_t span = last - t.offset + 1;
  const uint64_t item = c10::elementSize(t.dtype);
  auto values = torch::empty({span}, options);
  source_->read(t.record_at + uint64_t(t.offset) * item, values.data_ptr(), uint64_t(span) * item);
  auto view = values.as_strided(t.sizes, t.strides, 0);
  return span == numel && view.is_contiguous() ? view : view.contiguous();
}

WeightReader open_weight_file(const std::string& path) {
  return WeightReader(open_file_source(path, "a weight file (.safetensors or .pt)"));
}

WeightFile read_weight_file(const std::string& path) { return read_all(open_weight_file(path)); }

WeightFile parse_weight_file(const std::string& bytes, const std::string& path) {
  return read_all(WeightReader(string_source(bytes, path)));
}

}  // namespace txl
