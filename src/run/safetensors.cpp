// safetensors: written by the format's rules, every byte range checked before it is read
// (safetensors.h).
#include "txl/run/safetensors.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cstring>

#include "txl/util/error.h"
#include "txl/util/fs.h"
#include "txl/util/hash.h"
#include "txl/util/json.h"

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

}  // namespace

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

}  // namespace txl
