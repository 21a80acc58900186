// torch.save's archive for a dict of tensors, written without LibTorch's TorchScript pickler
// (torch_save.h says why): the pickle opcodes by hand, the zip by LibTorch's stream writer.
#include "txl/run/torch_save.h"

#include <caffe2/serialize/inline_container.h>

#include "txl/util/fs.h"

namespace txl {

namespace {

// Pickle protocol 2, the opcodes a dict of tensors needs.
class PickleWriter {
 public:
  void proto() { out_ += "\x80\x02"; }
  void op(char c) { out_ += c; }
  void text(const std::string& s) {  // BINUNICODE
    out_ += 'X';
    put_le(s.size(), 4);
    out_ += s;
  }
  void integer(int64_t v) {
    if (v >= INT32_MIN && v <= INT32_MAX) {  // BININT
      out_ += 'J';
      put_le(uint64_t(uint32_t(int32_t(v))), 4);
    } else {  // LONG1, 8 bytes two's complement
      out_ += "\x8a\x08";
      put_le(uint64_t(v), 8);
    }
  }
  void global(const std::string& module, const std::string& name) {
    out_ += 'c' + module + '\n' + name + '\n';
  }
  void int_tuple(c10::IntArrayRef values) {
    op('(');
    for (const int64_t v : values) integer(v);
    op('t');
  }
  std::string take() { return std::move(out_); }

 private:
  void put_le(uint64_t v, int n) {
    for (int k = 0; k < n; ++k) out_ += char((v >> (8 * k)) & 0xFF);
  }
  std::string out_;
};

std::string storage_type(torch::Dtype dtype) {
  switch (dtype) {
    case torch::kFloat64:
      return "DoubleStorage";
    case torch::kFloat16:
      return "HalfStorage";
    case torch::kBFloat16:
      return "BFloat16Storage";
    case torch::kInt64:
      return "LongStorage";
    case torch::kInt32:
      return "IntStorage";
    default:
      return "FloatStorage";  // txl's weights (callers convert anything else)
  }
}

// _rebuild_tensor_v2(persistent storage, 0, size, stride, False, {}) for tensor `key`.
void pickle_tensor(PickleWriter& w, const torch::Tensor& t, const std::string& key) {
  w.global("torch._utils", "_rebuild_tensor_v2");
  w.op('(');
  w.op('(');  // the persistent id: ('storage', torch.XStorage, key, 'cpu', numel)
  w.text("storage");
  w.global("torch", storage_type(t.scalar_type()));
  w.text(key);
  w.text("cpu");
  w.integer(t.numel());
  w.op('t');
  w.op('Q');  // BINPERSID
  w.integer(0);
  w.int_tuple(t.sizes());
  w.int_tuple(t.strides());
  w.op('\x89');  // NEWFALSE: requires_grad
  w.op('}');     // backward hooks: none
  w.op('t');
  w.op('R');
}

}  // namespace

std::string torch_state_dict_bytes(const std::vector<NamedTensor>& tensors) {
  std::vector<torch::Tensor> data;
  PickleWriter w;
  w.proto();
  w.op('}');
  w.op('(');
  for (const auto& t : tensors) {
    auto value = t.tensor.detach().to(torch::kCPU).contiguous();
    if (storage_type(value.scalar_type()) == "FloatStorage") value = value.to(torch::kFloat32);
    w.text(t.name);
    pickle_tensor(w, value, std::to_string(data.size()));
    data.push_back(value);
  }
  w.op('u');  // SETITEMS
  w.op('.');
  const std::string pkl = w.take();
  std::string archive;
  {
    caffe2::serialize::PyTorchStreamWriter writer([&](const void* p, size_t n) {
      archive.append(static_cast<const char*>(p), n);
      return n;
    });
    writer.writeRecord("data.pkl", pkl.data(), pkl.size());
    writer.writeRecord("byteorder", "little", 6);
    for (size_t k = 0; k < data.size(); ++k)
      writer.writeRecord("data/" + std::to_string(k), data[k].data_ptr(), data[k].nbytes());
    writer.writeEndOfFile();
  }
  return archive;
}

void write_torch_dict(const std::string& path, const std::vector<NamedTensor>& tensors) {
  check_unique_names(tensors, path);
  write_file_atomic(path, torch_state_dict_bytes(tensors));
}

}  // namespace txl
