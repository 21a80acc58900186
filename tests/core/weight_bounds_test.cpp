// A weight file never costs more than it holds (issue 54, causes 1-3, 5, 6): a hostile pickle
// (nested past the bound, too many values, a compressed record, a name twice) is refused
// without a crash; opening a file reads its header, not its declared size; a tensor's bytes are
// read only after its name and shape matched the model, and only the span it views; and an
// import checks memory before it builds the model, never removes or writes its own inputs, and
// never touches a run that another process holds.
#include <caffe2/serialize/inline_container.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <tuple>

#include "cli_harness.h"
#include "tiny_runs.h"
#include "txl/platform/resources.h"
#include "txl/run/interop.h"
#include "txl/run/run_dir.h"
#include "txl/run/weight_file.h"
#include "txl/util/error.h"

namespace txl {
namespace {

namespace fs = std::filesystem;
using testing::read_text;
using testing::run_txl;
using testing::write_text;

// --- Pickles by hand (protocol 2), as torch.save lays out a dict of tensors ----------------

std::string le32(uint32_t v) {
  std::string out;
  for (int i = 0; i < 4; ++i) out.push_back(char((v >> (8 * i)) & 0xFF));
  return out;
}
std::string text(const std::string& s) { return "X" + le32(uint32_t(s.size())) + s; }
std::string integer(int64_t v) { return "J" + le32(uint32_t(int32_t(v))); }
std::string ints(const std::vector<int64_t>& values) {
  std::string out = "(";
  for (const int64_t v : values) out += integer(v);
  return out + "t";
}

// _rebuild_tensor_v2 of a float view of storage `key` (`numel` values).
std::string tensor_view(const std::string& key, int64_t numel, int64_t offset,
                        const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  return "ctorch._utils\n_rebuild_tensor_v2\n((" + text("storage") + "ctorch\nFloatStorage\n" +
         text(key) + text("cpu") + integer(numel) + "tQ" + integer(offset) + ints(sizes) +
         ints(strides) + "\x89}tR";
}

std::string dict_pickle(const std::vector<std::pair<std::string, std::string>>& items) {
  std::string out = "\x80\x02}(";
  for (const auto& [name, value] : items) out += text(name) + value;
  return out + "u.";
}

std::string archive(const std::string& pickle,
                    const std::vector<std::pair<std::string, std::string>>& records = {}) {
  std::string out;
  caffe2::serialize::PyTorchStreamWriter writer([&](const void* p, size_t n) {
    out.append(static_cast<const char*>(p), n);
    return n;
  });
  writer.writeRecord("data.pkl", pickle.data(), pickle.size());
  for (const auto& [name, bytes] : records) writer.writeRecord(name, bytes.data(), bytes.size());
  writer.writeEndOfFile();
  return out;
}

void expect_refused(const std::string& bytes, const std::string& needle) {
  try {
    parse_weight_file(bytes, "w.pt");
    ADD_FAILURE() << "accepted; expected: " << needle;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(WeightBounds, HostilePicklesAreRefusedWithoutACrash) {
  // 10^5 nested lists crashed txl on teardown (SIGSEGV): refused at depth 33.
  const int n = 100000;
  expect_refused(archive("\x80\x02" + std::string(n, ']') + std::string(n - 1, 'a') + "."),
                 "nested more than 32 deep");
  // Values past the bound (each None is one): refused before they cost more.
  expect_refused(archive("\x80\x02" + std::string((1 << 20) + 2, 'N') + "."),
                 "values, which no state dict needs");
  // A memo that grows by one entry a byte (MEMOIZE), past the bound.
  expect_refused(archive("\x80\x02N" + std::string((1 << 20) + 2, '\x94') + "."),
                 "memo entries, which no state dict needs");
  // The same name twice in the dict (safetensors refuses that too).
  const std::string one = tensor_view("0", 2, 0, {2}, {1});
  expect_refused(archive(dict_pickle({{"a", one}, {"a", one}}), {{"data/0", std::string(8, 0)}}),
                 "tensor a is in the dict twice");
  // STACK_GLOBAL of two integers (was "refers to .").
  expect_refused(archive("\x80\x02K\x01K\x02\x93."), "STACK_GLOBAL of a int and a int");
  // A storage whose record is not the size its numel says.
  expect_refused(archive(dict_pickle({{"a", one}}), {{"data/0", std::string(12, 0)}}),
                 "says 2 values of 4 bytes but its record holds 12 bytes");
}

// The zip's central directory: entry `k`'s fixed header.
size_t central_entry(const std::string& zip, int k) {
  size_t at = 0;
  for (int i = 0; i <= k; ++i) at = zip.find("PK\x01\x02", i == 0 ? 0 : at + 4);
  return at;
}

TEST(WeightBounds, CompressedOrRepeatedZipEntriesAreRefusedBeforeTheyAreRead) {
  const std::string good = archive(dict_pickle({{"a", tensor_view("0", 2, 0, {2}, {1})}}),
                                   {{"data/0", std::string(8, 0)}, {"data/1", std::string(8, 0)}});
  EXPECT_EQ(parse_weight_file(good, "w.pt").tensors.size(), 1u);
  std::string deflated = good;  // the method of entry 1 (data/0) says "deflate"
  deflated[central_entry(deflated, 1) + 10] = 8;
  expect_refused(deflated, "is compressed (method 8");
  std::string twice = good;  // entry 2's name (…/data/1) made entry 1's (…/data/0)
  const size_t name = central_entry(twice, 2) + 46;
  const size_t len = uint8_t(twice[central_entry(twice, 2) + 28]);
  twice[name + len - 1] = '0';
  expect_refused(twice, "is in the archive twice");
}

// A source that counts the bytes it is asked for.
class CountingSource : public ByteSource {
 public:
  explicit CountingSource(std::string bytes) : inner_(string_source(std::move(bytes), "c.pt")) {}
  const std::string& name() const override { return inner_->name(); }
  uint64_t size() const override { return inner_->size(); }
  void read(uint64_t at, void* dst, uint64_t n) const override {
    read_ += n;
    inner_->read(at, dst, n);
  }
  mutable uint64_t read_ = 0;

 private:
  std::unique_ptr<ByteSource> inner_;
};

TEST(WeightBounds, OpeningReadsTheHeaderAndATensorReadsOnlyTheSpanItViews) {
  // One 4 MB storage, 1,500 views of 2 values each, and a zero-stride [30000, 30000] view:
  // opening describes them all (on the meta device) and reads none of their values.
  const int64_t numel = 1 << 20;
  std::vector<std::pair<std::string, std::string>> items;
  for (int k = 0; k < 1500; ++k)
    items.emplace_back("v" + std::to_string(k), tensor_view("0", numel, k, {2}, {1}));
  items.emplace_back("wide", tensor_view("0", numel, 0, {30000, 30000}, {0, 0}));
  const std::string bytes =
      archive(dict_pickle(items), {{"data/0", std::string(size_t(numel) * 4, 0)}});
  auto counting = std::make_unique<CountingSource>(bytes);
  CountingSource* source = counting.get();
  const WeightReader reader(std::move(counting));
  ASSERT_EQ(reader.index().size(), 1501u);
  EXPECT_EQ(reader.index().back().tensor.sizes(), (std::vector<int64_t>{30000, 30000}));
  EXPECT_TRUE(reader.index().back().tensor.is_meta());
  EXPECT_LT(source->read_, uint64_t{1} << 20) << "opening read the storage";
  const uint64_t before = source->read_;
  const torch::Tensor v = reader.read(7);
  EXPECT_EQ(v.numel(), 2);
  EXPECT_EQ(source->read_ - before, 8u) << "a 2-value view read more than its 8 bytes";
}

TEST(WeightBounds, AFileIsRefusedByItsHeaderNotReadWhole) {
  // A header that is fine, then 6 GiB of data no tensor claims (a sparse file: no disk used).
  const std::string dir = testing::scratch_dir("weight_bounds_sparse");
  const std::string path = dir + "/big.safetensors";
  const std::string header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  std::string head;
  for (int i = 0; i < 8; ++i) head.push_back(char((header.size() >> (8 * i)) & 0xFF));
  write_text(path, head + header + std::string(8, '\0'));
  fs::resize_file(path, uint64_t{6} << 30);
  const double peak_before = peak_rss_mb();
  try {
    open_weight_file(path);
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("belong to none"), std::string::npos) << e.what();
  }
  EXPECT_LT(peak_rss_mb() - peak_before, 200.0) << "the file was read whole";
  testing::cleanup_scratch();
}

// --- Import, as a user runs it -------------------------------------------------------------

// The tiny relative run (tiny_runs.h), exported once per process: m.safetensors,
// m.config.json, m.vocab.txt.
class WeightImport : public ::testing::Test {
 protected:
  void SetUp() override {
    static const std::string dir = [] {
      const std::string d = testing::fresh_dir("weight_import");
      run_txl({"export", "--run", testing::tiny_run("relative"), "--out", d + "/m.safetensors"});
      return d;
    }();
    dir_ = dir;
    ASSERT_TRUE(fs::exists(dir_ + "/m.safetensors"));
  }
  std::vector<std::string> import_args(const std::string& weights, const std::string& run,
                                       const std::string& config = "") const {
    return {"import",
            "--weights",
            weights,
            "--vocab",
            dir_ + "/m.vocab.txt",
            "--config",
            config.empty() ? dir_ + "/m.config.json" : config,
            "--run-dir",
            run};
  }
  std::string dir_;
};

TEST_F(WeightImport, NeverRemovesOrWritesItsOwnInputs) {
  const std::string run = dir_ + "/own";
  ASSERT_EQ(run_txl(import_args(dir_ + "/m.safetensors", run)).code, 0);
  fs::copy_file(dir_ + "/m.safetensors", run + "/best.pt");  // the user's file, in the run
  const std::string before = read_text(run + "/best.pt");
  auto args = import_args(run + "/best.pt", run);
  args.push_back("--force");
  auto r = run_txl(args);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--weights " + run + "/best.pt is the run directory's own best.pt"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(read_text(run + "/best.pt"), before);
  args = import_args(dir_ + "/m.safetensors", run, run + "/config.json");
  args.push_back("--force");
  r = run_txl(args);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("is the run directory's own config.json"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::exists(run + "/best.pt"));
  // origin.json names all three inputs the same way (absolute).
  const auto origin = nlohmann::json::parse(read_text(run + "/origin.json"));
  for (const char* key : {"imported_from", "config", "vocab"})
    EXPECT_TRUE(fs::path(origin.at(key).get<std::string>()).is_absolute()) << key;
}

TEST_F(WeightImport, ARunInUseIsNotTouched) {
  const std::string run = dir_ + "/busy";
  ASSERT_EQ(run_txl(import_args(dir_ + "/m.safetensors", run)).code, 0);
  write_text(run + "/metrics.jsonl", "{\"step\": 1}\n");
  const RunLock training(run);  // as txl train holds it
  auto args = import_args(dir_ + "/m.safetensors", run);
  args.push_back("--force");
  const auto r = run_txl(args);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("is in use by another txl"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::exists(run + "/metrics.jsonl"));
}

TEST_F(WeightImport, MemoryIsCheckedBeforeTheModelIsBuilt) {
  // 24 layers at d_model 8192 with the tiny run's weights: refused by the memory check, with
  // the figures, before a byte of the model is allocated (it took 7 GB and 31 s, then exit 1).
  auto config = nlohmann::json::parse(read_text(dir_ + "/m.config.json"));
  config["model"]["n_layer"] = 24;
  config["model"]["d_model"] = 8192;
  config["model"]["d_head"] = 1024;
  config["model"]["n_head"] = 8;
  config["model"]["d_inner"] = 32768;
  const std::string big = dir_ + "/big.config.json";
  write_text(big, config.dump());
  const std::string run = dir_ + "/big";
  const auto r =
      run_txl(import_args(dir_ + "/m.safetensors", run, big), {"TXL_MEMORY_LIMIT_MB=2000"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("importing it needs about"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(run));
}

TEST_F(WeightImport, ShapesAreComparedBeforeAnyTensorIsRead) {
  // The model's embedding as a zero-stride [30000, 30000] view of one value: refused by its
  // shape, never materialised (it allocated 3.7 GB, then exited 1).
  const std::string path = dir_ + "/wide.pt";
  write_text(
      path,
      archive(dict_pickle({{"embedding.weight", tensor_view("0", 1, 0, {30000, 30000}, {0, 0})}}),
              {{"data/0", std::string(4, 0)}}));
  const std::string run = dir_ + "/wide";
  const auto r = run_txl(import_args(path, run));
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("embedding.weight is [30000, 30000] in the file but"), std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(run));
}

TEST_F(WeightImport, LinksLineEndsAndTheFileExportReadAreNamed) {
  // A dangling link as --run-dir: named, not "File exists".
  const std::string link = dir_ + "/dangling";
  fs::create_symlink(dir_ + "/nowhere", link);
  auto r = run_txl(import_args(dir_ + "/m.safetensors", link));
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("is a symbolic link to " + dir_ + "/nowhere, which does not exist"),
            std::string::npos)
      << r.err;
  // A vocabulary with Windows line ends, or a byte-order mark: named, not "no <unk>".
  const std::string vocab = read_text(dir_ + "/m.vocab.txt");
  std::string crlf;
  for (const char c : vocab) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  for (const auto& [name, bytes, needle] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"crlf.txt", crlf, ":1: ends with a carriage return"},
           {"bom.txt", "\xEF\xBB\xBF" + vocab, "starts with a UTF-8 byte-order mark"}}) {
    write_text(dir_ + "/" + name, bytes);
    auto args = import_args(dir_ + "/m.safetensors", dir_ + "/v_" + name);
    args[4] = dir_ + "/" + name;
    r = run_txl(args);
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  }
  // An imported run has no best.pt: export says it read checkpoint.pt.
  const std::string run = dir_ + "/exported";
  ASSERT_EQ(run_txl(import_args(dir_ + "/m.safetensors", run)).code, 0);
  r = run_txl({"export", "--run", run, "--out", dir_ + "/again.pt"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.output.find("(checkpoint.pt step 0"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace txl
