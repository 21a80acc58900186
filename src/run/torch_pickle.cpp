// A restricted unpickler for torch.save's data.pkl (torch_pickle.h): a stack machine over the
// opcodes of pickle protocols 2-4 that torch.save emits, building values of a few kinds. It
// stays over 420 lines (about 460) because its opcode tables, a few lines per opcode once
// formatted, read best beside the stack they work on.
#include "txl/run/torch_pickle.h"

#include <caffe2/serialize/inline_container.h>
#include <spdlog/fmt/fmt.h>

#include <cstring>
#include <map>
#include <memory>
#include <sstream>

#include "txl/util/error.h"

namespace txl {

namespace {

struct Value;
using ValuePtr = std::shared_ptr<Value>;

struct Value {
  enum Kind {
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kTuple,
    kList,
    kDict,
    kGlobal,
    kTensor,
    kStorage,
    kMark
  };
  Kind kind = kNone;
  int64_t i = 0;
  double f = 0;
  std::string s;                                    // string; global "module.name"
  std::vector<ValuePtr> items;                      // tuple, list
  std::vector<std::pair<ValuePtr, ValuePtr>> dict;  // dict in insertion order
  torch::Tensor tensor;                             // tensor; storage (1-D bytes as dtype)
};

ValuePtr make(Value::Kind kind) {
  auto v = std::make_shared<Value>();
  v->kind = kind;
  return v;
}

const std::map<std::string, torch::Dtype>& storage_types() {
  static const std::map<std::string, torch::Dtype> types = {
      {"torch.FloatStorage", torch::kFloat32}, {"torch.DoubleStorage", torch::kFloat64},
      {"torch.HalfStorage", torch::kFloat16},  {"torch.BFloat16Storage", torch::kBFloat16},
      {"torch.LongStorage", torch::kInt64},    {"torch.IntStorage", torch::kInt32},
      {"torch.ShortStorage", torch::kInt16},   {"torch.CharStorage", torch::kInt8},
      {"torch.ByteStorage", torch::kUInt8},    {"torch.BoolStorage", torch::kBool}};
  return types;
}

bool allowed_global(const std::string& name) {
  return name == "collections.OrderedDict" || name == "torch._utils._rebuild_tensor_v2" ||
         name == "torch._utils._rebuild_parameter" ||
         name == "torch.jit._pickle.restore_type_tag" || storage_types().count(name) > 0;
}

class Unpickler {
 public:
  Unpickler(const std::string& pkl, caffe2::serialize::PyTorchStreamReader& archive,
            std::string path)
      : p_(pkl), archive_(archive), path_(std::move(path)) {}

  ValuePtr run() {
    while (true) {
      const uint8_t op = byte();
      if (op == '.') break;
      step(op);
    }
    if (stack_.size() != 1)
      fail("the pickle ends with " + std::to_string(stack_.size()) + " values");
    return stack_.back();
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(fmt::format("{}: data.pkl at byte {}: {}", path_, at_, what));
  }
  uint8_t byte() {
    if (at_ >= p_.size()) fail("ends before its STOP");
    return static_cast<uint8_t>(p_[at_++]);
  }
  std::string bytes(size_t n) {
    if (n > p_.size() - at_) fail("a length runs past the end");
    std::string out = p_.substr(at_, n);
    at_ += n;
    return out;
  }
  uint64_t le(int n) {
    uint64_t v = 0;
    for (int k = 0; k < n; ++k) v |= uint64_t(byte()) << (8 * k);
    return v;
  }
  std::string line() {
    const size_t end = p_.find('\n', at_);
    if (end == std::string::npos) fail("a GLOBAL without its line end");
    std::string out = p_.substr(at_, end - at_);
    at_ = end + 1;
    return out;
  }
  ValuePtr pop() {
    if (stack_.empty()) fail("pops an empty stack");
    auto v = stack_.back();
    stack_.pop_back();
    return v;
  }
  std::vector<ValuePtr> pop_to_mark() {
    size_t k = stack_.size();
    while (k > 0 && stack_[k - 1]->kind != Value::kMark) --k;
    if (k == 0) fail("no MARK");
    std::vector<ValuePtr> out(stack_.begin() + long(k), stack_.end());
    stack_.resize(k - 1);
    return out;
  }
  void push_int(int64_t v) {
    auto x = make(Value::kInt);
    x->i = v;
    stack_.push_back(x);
  }
  void push_string(std::string s) {
    auto x = make(Value::kString);
    x->s = std::move(s);
    stack_.push_back(x);
  }
  void push_global(const std::string& module, const std::string& name) {
    const std::string full = module + "." + name;
    if (!allowed_global(full))
      fail("refers to " + full +
           ", which a dict of tensors does not need; txl runs nothing from "
           "a file, so it does not read it");
    auto g = make(Value::kGlobal);
    g->s = full;
    stack_.push_back(g);
  }
  void push_tuple(std::vector<ValuePtr> items) {
    auto t = make(Value::kTuple);
    t->items = std::move(items);
    stack_.push_back(t);
  }
  void memo_put(size_t key) {
    if (stack_.empty()) fail("memoizes an empty stack");
    memo_[key] = stack_.back();
  }
  void memo_get(size_t key) {
    const auto it = memo_.find(key);
    if (it == memo_.end()) fail("reads memo " + std::to_string(key) + ", never written");
    stack_.push_back(it->second);
  }

  void setitems(const std::vector<ValuePtr>& kv) {
    auto d = pop();
    if (d->kind != Value::kDict || kv.size() % 2) fail("SETITEM(S) on something not a dict");
    for (size_t k = 0; k + 1 < kv.size(); k += 2) d->dict.emplace_back(kv[k], kv[k + 1]);
    stack_.push_back(d);
  }

  void step(uint8_t op) {
    if (!literal(op) && !lookup(op) && !structure(op))
      fail(fmt::format("opcode 0x{:02x} is not one torch.save writes", op));
  }

  void push(Value::Kind kind) { stack_.push_back(make(kind)); }

  // Opcodes that push a constant: framing, marks, None, booleans, numbers, strings.
  bool literal(uint8_t op) {
    switch (op) {
      case 0x80:
        byte();
        return true;  // PROTO
      case 0x95:
        le(8);
        return true;  // FRAME
      case '(':
        push(Value::kMark);
        return true;
      case '}':
        push(Value::kDict);
        return true;
      case ']':
        push(Value::kList);
        return true;
      case ')':
        push_tuple({});
        return true;
      case 'N':
        push(Value::kNone);
        return true;
      case 0x88:
        push_int(1);
        stack_.back()->kind = Value::kBool;
        return true;  // NEWTRUE
      case 0x89:
        push_int(0);
        stack_.back()->kind = Value::kBool;
        return true;  // NEWFALSE
      case 'K':
        push_int(int64_t(le(1)));
        return true;
      case 'M':
        push_int(int64_t(le(2)));
        return true;
      case 'J':
        push_int(int64_t(int32_t(uint32_t(le(4)))));
        return true;
      case 0x8a:
        push_int(long1());
        return true;
      case 'G':
        push_float();
        return true;  // BINFLOAT
      case 'X':
        push_string(bytes(le(4)));
        return true;  // BINUNICODE
      case 0x8c:
        push_string(bytes(byte()));
        return true;  // SHORT_BINUNICODE
      default:
        return false;
    }
  }

  // Opcodes that name a global or reuse a memoized value.
  bool lookup(uint8_t op) {
    switch (op) {
      case 'c': {
        const std::string module = line();
        push_global(module, line());
        return true;
      }
      case 0x93: {
        auto name = pop(), module = pop();
        push_global(module->s, name->s);
        return true;
      }
      case 'q':
        memo_put(byte());
        return true;
      case 'r':
        memo_put(le(4));
        return true;
      case 0x94:
        memo_put(memo_.size());
        return true;  // MEMOIZE
      case 'h':
        memo_get(byte());
        return true;
      case 'j':
        memo_get(le(4));
        return true;
      default:
        return false;
    }
  }

  // Opcodes that build a value from the stack: tuples, dict items, list items, storages, calls.
  bool structure(uint8_t op) {
    switch (op) {
      case 't':
        push_tuple(pop_to_mark());
        return true;
      case 0x85:
      case 0x86:
      case 0x87:
        push_tuple(pop_n(op - 0x84));
        return true;  // TUPLE1..3
      case 's':
        setitems(pop_n(2));
        return true;
      case 'u':
        setitems(pop_to_mark());
        return true;
      case 'a':
        appends(pop_n(1));
        return true;
      case 'e':
        appends(pop_to_mark());
        return true;
      case 'Q':
        stack_.push_back(storage(pop()));
        return true;  // BINPERSID
      case 'R': {
        auto args = pop(), f = pop();
        stack_.push_back(reduce(*f, *args));
        return true;
      }
      case 'b':
        pop();
        return true;  // BUILD: an OrderedDict's _metadata (versions), not needed
      default:
        return false;
    }
  }

  std::vector<ValuePtr> pop_n(int n) {
    std::vector<ValuePtr> out(static_cast<size_t>(n));
    for (int k = n - 1; k >= 0; --k) out[size_t(k)] = pop();
    return out;
  }
  int64_t long1() {
    const size_t n = byte();
    if (n > 8) fail("an integer of more than 8 bytes");
    uint64_t v = n ? le(int(n)) : 0;
    if (n && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t{0} << (8 * n);
    return int64_t(v);
  }
  void push_float() {
    uint64_t v = 0;
    for (int k = 0; k < 8; ++k) v = (v << 8) | byte();  // big-endian
    auto x = make(Value::kFloat);
    std::memcpy(&x->f, &v, 8);
    stack_.push_back(x);
  }
  void appends(const std::vector<ValuePtr>& values) {
    auto l = pop();
    if (l->kind != Value::kList) fail("APPEND(S) on something not a list");
    for (const auto& v : values) l->items.push_back(v);
    stack_.push_back(l);
  }

  // ('storage', torch.XStorage, key, location, numel) -> the record data/<key> as that dtype.
  ValuePtr storage(const ValuePtr& pid) {
    if (pid->kind != Value::kTuple || pid->items.size() < 5 || pid->items[0]->s != "storage" ||
        pid->items[1]->kind != Value::kGlobal || pid->items[2]->kind != Value::kString)
      fail("a persistent id that is not a tensor storage");
    const std::string key = pid->items[2]->s;
    const auto found = storages_.find(key);
    if (found != storages_.end()) return found->second;
    const auto type = storage_types().find(pid->items[1]->s);
    if (type == storage_types().end()) fail(pid->items[1]->s + " is not a storage type");
    const torch::Dtype dtype = type->second;
    const std::string record = "data/" + key;
    if (!archive_.hasRecord(record)) fail("storage " + key + " has no record " + record);
    auto [data, size] = archive_.getRecord(record);
    const size_t item = c10::elementSize(dtype);
    auto bytes = torch::empty({int64_t(size / item)}, torch::TensorOptions().dtype(dtype));
    if (size % item) fail("storage " + key + " is not a whole number of elements");
    std::memcpy(bytes.data_ptr(), data.get(), size);
    auto s = make(Value::kStorage);
    s->tensor = bytes;
    storages_[key] = s;
    return s;
  }

  std::vector<int64_t> ints(const Value& t, const char* what) {
    if (t.kind != Value::kTuple) fail(std::string(what) + " is not a tuple");
    std::vector<int64_t> out;
    for (const auto& v : t.items) {
      if (v->kind != Value::kInt) fail(std::string(what) + " holds a non-integer");
      out.push_back(v->i);
    }
    return out;
  }

  ValuePtr reduce(const Value& f, const Value& args) {
    if (f.kind != Value::kGlobal || args.kind != Value::kTuple)
      fail("REDUCE of something not a known function");
    if (f.s == "collections.OrderedDict") return make(Value::kDict);
    if (f.s == "torch.jit._pickle.restore_type_tag") {  // (value, "Dict[str, Tensor]"): LibTorch's
      if (args.items.empty()) fail("restore_type_tag without a value");
      return args.items[0];
    }
    if (f.s == "torch._utils._rebuild_parameter") {
      if (args.items.empty() || args.items[0]->kind != Value::kTensor)
        fail("_rebuild_parameter without a tensor");
      return args.items[0];
    }
    if (f.s != "torch._utils._rebuild_tensor_v2" || args.items.size() < 4 ||
        args.items[0]->kind != Value::kStorage || args.items[1]->kind != Value::kInt)
      fail("a call of " + f.s + " that does not rebuild a tensor");
    const torch::Tensor& storage = args.items[0]->tensor;
    const auto size = ints(*args.items[2], "a tensor's size");
    const auto stride = ints(*args.items[3], "a tensor's stride");
    const int64_t offset = args.items[1]->i;
    if (size.size() != stride.size()) fail("a tensor's size and stride differ in length");
    double last = double(offset);  // the last element's index (doubles: no overflow)
    bool empty = false;
    for (size_t k = 0; k < size.size(); ++k) {
      if (size[k] < 0 || stride[k] < 0) fail("a negative size or stride");
      empty = empty || size[k] == 0;
      last += double(size[k] - 1) * double(stride[k]);
    }
    if (offset < 0 || (!empty && last >= double(storage.numel())))
      fail("a tensor runs past its storage");
    auto v = make(Value::kTensor);
    v->tensor = storage.as_strided(size, stride, offset).clone();
    return v;
  }

  const std::string& p_;
  caffe2::serialize::PyTorchStreamReader& archive_;
  std::string path_;
  size_t at_ = 0;
  std::vector<ValuePtr> stack_;
  std::map<size_t, ValuePtr> memo_;
  std::map<std::string, ValuePtr> storages_;
};

std::string kind_name(const Value& v) {
  static const char* names[] = {"None", "bool", "int",      "float",  "str",     "tuple",
                                "list", "dict", "function", "tensor", "storage", "mark"};
  return names[v.kind];
}

}  // namespace

std::vector<NamedTensor> read_torch_state_dict(const std::string& bytes, const std::string& path) {
  std::istringstream in(bytes);
  std::unique_ptr<caffe2::serialize::PyTorchStreamReader> archive;
  std::string pkl;
  try {
    archive = std::make_unique<caffe2::serialize::PyTorchStreamReader>(&in);
    if (archive->hasRecord("byteorder")) {
      auto [order, n] = archive->getRecord("byteorder");
      if (std::string(static_cast<const char*>(order.get()), n) != "little")
        throw InputError(path + ": tensors saved big-endian; txl reads little-endian ones");
    }
    auto [data, size] = archive->getRecord("data.pkl");
    pkl.assign(static_cast<const char*>(data.get()), size);
  } catch (const c10::Error& e) {
    std::string what = e.what();
    throw InputError(
        fmt::format("{}: not a torch.save archive ({})", path, what.substr(0, what.find('\n'))));
  }
  Unpickler unpickler(pkl, *archive, path);
  ValuePtr root;
  try {
    root = unpickler.run();
  } catch (const c10::Error& e) {
    std::string what = e.what();
    throw InputError(fmt::format("{}: {}", path, what.substr(0, what.find('\n'))));
  }
  if (root->kind != Value::kDict)
    throw InputError(fmt::format("{}: holds a {}, not a state dict (a dict of named tensors)", path,
                                 kind_name(*root)));
  std::vector<NamedTensor> out;
  for (const auto& [k, v] : root->dict) {
    if (k->kind == Value::kString && v->kind == Value::kDict) {
      throw InputError(
          fmt::format("{}: entry \"{}\" is a dict; if it is the state dict, save it "
                      "alone: torch.save(torch.load(FILE)[\"{}\"], NEW)",
                      path, k->s, k->s));
    }
    if (k->kind != Value::kString || v->kind != Value::kTensor)
      throw InputError(fmt::format("{}: an entry is {} -> {}, not a name -> tensor", path,
                                   kind_name(*k), kind_name(*v)));
    out.push_back({k->s, v->tensor});
  }
  return out;
}

}  // namespace txl
