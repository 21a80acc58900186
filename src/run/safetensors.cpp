// safetensors and torch.save dicts: written by the format's rules, every byte range checked
// before it is read (safetensors.h).
#include "txl/run/safetensors.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "txl/run/torch_pickle.h"
#include "txl/util/error.h"
#include "txl/util/fs.h"
#include "txl/util/hash.h"
#include "txl/util/json.h"
#include "txl/util/text.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "weight files are little-endian; this host is not");

namespace txl {

namespace {

struct DtypeName {
  const char* name;
  torch::Dtype dtype;
};

const std::vector<DtypeName>& dtype_names() {
  static const std::vector<DtypeName> names = {{"F64", torch::kFloat64}, {"F32", torch::kFloat32},
                                               {"F16", torch::kFloat16}, {"BF16", torch::kBFloat16},
                                               {"I64", torch::kInt64},   {"I32", torch::kInt32},
                                               {"I16", torch::kInt16},   {"I8", torch::kInt8},
                                               {"U8", torch::kUInt8},    {"BOOL", torch::kBool}};
  return names;
}

std::string dtype_name(torch::Dtype dtype, const std::string& tensor) {
  for (const auto& d : dtype_names())
    if (d.dtype == dtype) return d.name;
  throw InputError(fmt::format("tensor {} has dtype {}, which safetensors cannot hold", tensor,
                               c10::toString(dtype)));
}

std::vector<std::string> known_dtypes() {
  std::vector<std::string> out;
  for (const auto& d : dtype_names()) out.emplace_back(d.name);
  return out;
}

torch::Tensor cpu_contiguous(const torch::Tensor& t) {
  return t.detach().to(torch::kCPU).contiguous();
}

void check_unique_names(const std::vector<NamedTensor>& tensors, const std::string& path) {
  std::set<std::string> seen;
  for (const auto& t : tensors) {
    if (t.name.empty()) throw InputError(path + ": a tensor without a name");
    if (!seen.insert(t.name).second)
      throw InputError(fmt::format("{}: tensor {} is given twice", path, t.name));
  }
}

// One entry of the header, checked against the data's size.
struct HeaderEntry {
  std::string name;
  torch::Dtype dtype = torch::kFloat32;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;
};

uint64_t whole_number(const nlohmann::json& j, const std::string& what) {
  if (!j.is_number_unsigned())
    throw InputError(what + " is " + shown(j) + ", not a whole number >= 0");
  return j.get<uint64_t>();
}

HeaderEntry header_entry(const std::string& name, const nlohmann::json& j, uint64_t data_bytes,
                         const std::string& path) {
  const std::string where = fmt::format("{}: tensor {}", path, name);
  if (!j.is_object() || !j.contains("dtype") || !j.contains("shape") ||
      !j.contains("data_offsets")) {
    throw InputError(where + ": expected an object with dtype, shape and data_offsets");
  }
  HeaderEntry e;
  e.name = name;
  const auto& dtype = j.at("dtype");
  const auto& names = dtype_names();
  const auto found = std::find_if(names.begin(), names.end(), [&](const DtypeName& d) {
    return dtype.is_string() && dtype.get<std::string>() == d.name;
  });
  if (found == names.end()) {
    throw InputError(fmt::format("{}: dtype {} is not one txl reads ({})", where, shown(dtype),
                                 fmt::join(known_dtypes(), ", ")));
  }
  e.dtype = found->dtype;
  const auto& shape = j.at("shape");
  const auto& offsets = j.at("data_offsets");
  if (!shape.is_array() || shape.size() > 16)
    throw InputError(where + ": shape is " + shown(shape) + ", not a list of at most 16 sizes");
  if (!offsets.is_array() || offsets.size() != 2)
    throw InputError(where + ": data_offsets is " + shown(offsets) + ", not [begin, end]");
  double elements = 1;
  for (const auto& d : shape) {
    const uint64_t size = whole_number(d, where + ": a size in shape");
    elements *= double(size);
    e.shape.push_back(static_cast<int64_t>(std::min<uint64_t>(size, uint64_t{1} << 62)));
  }
  e.begin = whole_number(offsets[0], where + ": data_offsets[0]");
  e.end = whole_number(offsets[1], where + ": data_offsets[1]");
  if (e.begin > e.end || e.end > data_bytes) {
    throw InputError(
        fmt::format("{}: data_offsets [{}, {}] are not a range inside the {} bytes "
                    "of data",
                    where, e.begin, e.end, data_bytes));
  }
  const double expected = elements * double(c10::elementSize(e.dtype));
  if (expected != double(e.end - e.begin)) {
    throw InputError(fmt::format("{}: shape {} of {} needs {:.0f} bytes but data_offsets hold {}",
                                 where, shown(shape), found->name, expected, e.end - e.begin));
  }
  return e;
}

// The ranges, in order of their start, must tile [0, data_bytes).
void check_ranges_tile(std::vector<HeaderEntry>& entries, uint64_t data_bytes,
                       const std::string& path) {
  std::sort(entries.begin(), entries.end(), [](const HeaderEntry& a, const HeaderEntry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t at = 0;
  for (const auto& e : entries) {
    if (e.begin < at) {
      throw InputError(fmt::format("{}: tensor {} at [{}, {}] overlaps the tensor before it", path,
                                   e.name, e.begin, e.end));
    }
    if (e.begin > at) {
      throw InputError(fmt::format("{}: bytes {}..{} of the data belong to no tensor (before {})",
                                   path, at, e.begin, e.name));
    }
    at = e.end;
  }
  if (at != data_bytes) {
    throw InputError(
        fmt::format("{}: {} bytes after the last tensor belong to none", path, data_bytes - at));
  }
}

std::map<std::string, std::string> metadata_of(const nlohmann::json& j, const std::string& path) {
  std::map<std::string, std::string> out;
  if (!j.is_object()) throw InputError(path + ": __metadata__ is not an object of strings");
  for (const auto& [k, v] : j.items()) {
    if (!v.is_string())
      throw InputError(fmt::format("{}: __metadata__.{} is {}, not a string", path, k, shown(v)));
    out[k] = v.get<std::string>();
  }
  return out;
}

nlohmann::json parse_header(const std::string& text, const std::string& path) {
  try {
    auto j = parse_json_strict(text, path);
    if (!j.is_object()) throw InputError(path + ": the header is not a JSON object");
    return j;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: the header is not JSON ({})", path, e.what()));
  }
}

// The header read and checked, the data's ranges tiled: where each tensor lies; no data read.
std::vector<TensorLocation> locate_safetensors(const ByteSource& source,
                                               std::map<std::string, std::string>& metadata) {
  const std::string& path = source.name();
  if (source.size() < 8)
    throw InputError(
        fmt::format("{}: {} bytes, too short for a safetensors header", path, source.size()));
  const std::string length = source.read_string(0, 8);
  const uint64_t n = read_u64_le(reinterpret_cast<const unsigned char*>(length.data()));
  if (n > kMaxHeaderBytes) {
    throw InputError(
        fmt::format("{}: a header of {} bytes is past the {} a weight file has; not "
                    "a safetensors file?",
                    path, n, kMaxHeaderBytes));
  }
  if (n > source.size() - 8) {
    throw InputError(
        fmt::format("{}: the header's length {} runs past the end of the file ({} "
                    "bytes after the 8 that give it): truncated, or not a safetensors file",
                    path, n, source.size() - 8));
  }
  const nlohmann::json header = parse_header(source.read_string(8, n), path);
  const uint64_t data_bytes = source.size() - 8 - n;
  std::vector<HeaderEntry> entries;
  for (const auto& [name, j] : header.items()) {
    if (name == "__metadata__") {
      metadata = metadata_of(j, path);
    } else {
      entries.push_back(header_entry(name, j, data_bytes, path));
    }
  }
  check_ranges_tile(entries, data_bytes, path);
  std::vector<TensorLocation> out;
  for (const auto& e : entries) {
    TensorLocation t;
    t.name = e.name;
    t.dtype = e.dtype;
    t.sizes = e.shape;
    t.strides.assign(e.shape.size(), 1);  // row-major (a tensor of no values has any strides)
    const bool empty = std::find(e.shape.begin(), e.shape.end(), 0) != e.shape.end();
    for (size_t k = e.shape.size(); k-- > 1 && !empty;)
      t.strides[k - 1] = t.strides[k] * e.shape[k];
    t.record_at = 8 + n + e.begin;
    t.record_bytes = e.end - e.begin;
    out.push_back(std::move(t));
  }
  return out;
}

constexpr const char* kZipMagic = "PK\x03\x04";
constexpr const char* kLegacyTorchMagic = "\x80\x02\x8a\x0a";

}  // namespace

void write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  check_unique_names(tensors, path);
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<torch::Tensor> data;
  uint64_t at = 0;
  for (const auto& t : tensors) {
    data.push_back(cpu_contiguous(t.tensor));
    const uint64_t bytes = data.back().nbytes();
    header[t.name] = {{"dtype", dtype_name(data.back().scalar_type(), t.name)},
                      {"shape", data.back().sizes().vec()},
                      {"data_offsets", {at, at + bytes}}};
    at += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string head;
  put_u64_le(head, text.size());
  head += text;
  std::vector<std::string_view> pieces = {head};
  for (const auto& t : data)
    pieces.emplace_back(static_cast<const char*>(t.data_ptr()), t.nbytes());
  write_file_atomic(path, pieces);
}

void write_torch_dict(const std::string& path, const std::vector<NamedTensor>& tensors) {
  check_unique_names(tensors, path);
  write_file_atomic(path, torch_state_dict_bytes(tensors));
}

namespace {

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
