// A restricted unpickler for torch.save's data.pkl (torch_pickle.h): a stack machine over the
// opcodes of pickle protocols 2-4 that torch.save emits, building values of a few kinds. It
// stays over 420 lines (about 460) because its opcode tables, a few lines per opcode once
// formatted, read best beside the stack they work on.
#include "txl/run/torch_pickle.h"

#include <spdlog/fmt/fmt.h>

#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>

#include "txl/run/zip_index.h"
#include "txl/util/error.h"

namespace txl {

namespace {

struct Value;
using ValuePtr = std::shared_ptr<Value>;

// Bounds no state dict comes near (each tensor is about 22 values, 4 deep: the bound is a dict
// of some 40,000 tensors, where a 285M-parameter model has 300), so that a hostile pickle costs
// at most a few hundred MB and tears down without deep recursion.
constexpr int kMaxDepth = 32;
constexpr size_t kMaxValues = size_t{1} << 20;
constexpr uint64_t kMaxPickleBytes = uint64_t{100} << 20;

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
  int depth = 1;  // 1 + the deepest value inside (containers)
  int64_t i = 0;
  double f = 0;
  std::string s;                                    // string; global "module.name"
  std::vector<ValuePtr> items;                      // tuple, list
  std::vector<std::pair<ValuePtr, ValuePtr>> dict;  // dict in insertion order
  TensorLocation tensor;  // tensor: its view of a storage; storage: dtype and record only
};

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

std::string kind_name(const Value& v);

class Unpickler {
 public:
  Unpickler(const std::string& pkl, const ZipIndex& archive, std::string path)
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
  ValuePtr make(Value::Kind kind) {
    if (++made_ > kMaxValues)
      fail(fmt::format("more than {} values, which no state dict needs", kMaxValues));
    auto v = std::make_shared<Value>();
    v->kind = kind;
    return v;
  }
  // `container` now holds `item`: the depth is checked before anything is built deeper.
  void nest(Value& container, const Value& item) {
    container.depth = std::max(container.depth, item.depth + 1);
    if (container.depth > kMaxDepth)
      fail(fmt::format("values nested more than {} deep, which no state dict is", kMaxDepth));
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
    for (const auto& v : items) nest(*t, *v);
    t->items = std::move(items);
    stack_.push_back(t);
  }
  void memo_put(size_t key) {
    if (stack_.empty()) fail("memoizes an empty stack");
    if (memo_.size() >= kMaxValues && !memo_.count(key))
      fail(fmt::format("more than {} memo entries, which no state dict needs", kMaxValues));
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
    for (size_t k = 0; k + 1 < kv.size(); k += 2) {
      nest(*d, *kv[k]);
      nest(*d, *kv[k + 1]);
      d->dict.emplace_back(kv[k], kv[k + 1]);
    }
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
        if (module->kind != Value::kString || name->kind != Value::kString)
          fail("STACK_GLOBAL of a " + kind_name(*module) + " and a " + kind_name(*name) +
               ", where a module and a name (two strings) belong");
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
    for (const auto& v : values) {
      nest(*l, *v);
      l->items.push_back(v);
    }
    stack_.push_back(l);
  }

  // ('storage', torch.XStorage, key, location, numel) -> the record data/<key>, not read: its
  // place in the archive, checked to hold exactly numel values of that dtype.
  ValuePtr storage(const ValuePtr& pid) {
    if (pid->kind != Value::kTuple || pid->items.size() < 5 || pid->items[0]->s != "storage" ||
        pid->items[1]->kind != Value::kGlobal || pid->items[2]->kind != Value::kString ||
        pid->items[4]->kind != Value::kInt)
      fail("a persistent id that is not a tensor storage");
    const std::string key = pid->items[2]->s;
    const auto found = storages_.find(key);
    if (found != storages_.end()) return found->second;
    const auto type = storage_types().find(pid->items[1]->s);
    if (type == storage_types().end()) fail(pid->items[1]->s + " is not a storage type");
    const torch::Dtype dtype = type->second;
    const std::string record = "data/" + key;
    const ZipEntry* entry = archive_.find(record);
    if (!entry) fail("storage " + key + " has no record " + record);
    const uint64_t item = c10::elementSize(dtype);
    const int64_t numel = pid->items[4]->i;
    if (numel < 0 || double(numel) * double(item) != double(entry->bytes))
      fail(fmt::format("storage {} says {} values of {} bytes but its record holds {} bytes", key,
                       numel, item, entry->bytes));
    auto s = make(Value::kStorage);
    s->tensor.dtype = dtype;
    s->tensor.record_at = entry->data_at;
    s->tensor.record_bytes = entry->bytes;
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
    const TensorLocation& storage = args.items[0]->tensor;
    const double storage_numel =
        double(storage.record_bytes) / double(c10::elementSize(storage.dtype));
    const auto size = ints(*args.items[2], "a tensor's size");
    const auto stride = ints(*args.items[3], "a tensor's stride");
    const int64_t offset = args.items[1]->i;
    if (size.size() != stride.size()) fail("a tensor's size and stride differ in length");
    double last = double(offset);  // the last element's index (doubles: no overflow)
    if (size.size() > 16) fail("a tensor of more than 16 dimensions");
    double numel = 1;
    for (size_t k = 0; k < size.size(); ++k) {
      if (size[k] < 0 || stride[k] < 0) fail("a negative size or stride");
      numel *= double(size[k]);
      last += double(size[k] - 1) * double(stride[k]);
    }
    if (numel > double(int64_t{1} << 40))
      fail(fmt::format("a tensor of {:.0f} values, past any model's", numel));
    if (offset < 0 || (numel > 0 && last >= storage_numel)) fail("a tensor runs past its storage");
    auto v = make(Value::kTensor);
    v->tensor = storage;
    v->tensor.sizes = size;
    v->tensor.strides = stride;
    v->tensor.offset = numel > 0 ? offset : 0;
    return v;
  }

  const std::string& p_;
  const ZipIndex& archive_;
  std::string path_;
  size_t at_ = 0;
  size_t made_ = 0;
  std::vector<ValuePtr> stack_;
  std::unordered_map<size_t, ValuePtr> memo_;
  std::map<std::string, ValuePtr> storages_;
};

std::string kind_name(const Value& v) {
  static const char* names[] = {"None", "bool", "int",      "float",  "str",     "tuple",
                                "list", "dict", "function", "tensor", "storage", "mark"};
  return names[v.kind];
}

}  // namespace

std::vector<TensorLocation> read_torch_state_dict(const ByteSource& archive) {
  const std::string& path = archive.name();
  const ZipIndex index(archive);
  if (const ZipEntry* order = index.find("byteorder")) {
    if (archive.read_string(order->data_at, std::min<uint64_t>(order->bytes, 16)) != "little")
      throw InputError(path + ": tensors saved big-endian; txl reads little-endian ones");
  }
  const ZipEntry* pkl_entry = index.find("data.pkl");
  if (!pkl_entry) throw InputError(path + ": not a torch.save archive (no data.pkl)");
  if (pkl_entry->bytes > kMaxPickleBytes)
    throw InputError(fmt::format("{}: data.pkl is {} bytes, past the {} a state dict's pickle has",
                                 path, pkl_entry->bytes, kMaxPickleBytes));
  const std::string pkl = archive.read_string(pkl_entry->data_at, pkl_entry->bytes);
  Unpickler unpickler(pkl, index, path);
  const ValuePtr root = unpickler.run();
  if (root->kind != Value::kDict)
    throw InputError(fmt::format("{}: holds a {}, not a state dict (a dict of named tensors)", path,
                                 kind_name(*root)));
  std::vector<TensorLocation> out;
  std::set<std::string> names;
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
    if (!names.insert(k->s).second)
      throw InputError(fmt::format("{}: tensor {} is in the dict twice", path, k->s));
    out.push_back(v->tensor);
    out.back().name = k->s;
  }
  return out;
}

}  // namespace txl
