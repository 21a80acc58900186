// Weights in and out (run/interop.h): export then import is bit-identical under both names and
// both formats; state dicts written by the Transformer-XL reference itself
// (tests/fixtures/reference, made by scripts/reference_fixture.py) import and give the
// per-token NLL the reference computed; every bad file is refused naming the problem, and
// nothing is written.
#include "txl/run/interop.h"

#include <caffe2/serialize/inline_container.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "txl/run/run_dir.h"
#include "txl/run/weight_file.h"
#include "txl/util/error.h"
#include "txl/util/text.h"

namespace txl {
namespace {

namespace fs = std::filesystem;
using testing::read_text;
using testing::run_txl;
using testing::write_text;

std::string fixture(const std::string& model, const std::string& file) {
  return std::string(TXL_SOURCE_DIR) + "/tests/fixtures/reference/" + model + "/" + file;
}

void expect_same_weights(const std::string& a, const std::string& b) {
  auto ra = load_run(a, "last");
  auto rb = load_run(b, "last");
  const auto pa = ra.model->named_parameters();
  const auto pb = rb.model->named_parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (const auto& item : pa) {
    SCOPED_TRACE(item.key());
    EXPECT_TRUE(torch::equal(item.value(), pb[item.key()]));
  }
}

// The reference's per-token NLL of its two segments (the second with the first's memory).
std::vector<double> segment_nlls(const std::string& run_dir, const nlohmann::json& expected) {
  auto run = load_run(run_dir, "last");
  torch::NoGradGuard no_grad;
  Memory memory;
  std::vector<double> out;
  for (const auto& segment : expected.at("segments")) {
    const auto data = segment.at("data").get<std::vector<int64_t>>();
    const auto target = segment.at("target").get<std::vector<int64_t>>();
    ForwardOptions o;
    o.targets = torch::tensor(target).view({1, -1});
    o.keep_memory = run.config.train.mem_len;
    auto r = run.model->forward(torch::tensor(data).view({1, -1}), memory, o);
    memory = r.memory;
    for (int64_t k = 0; k < r.nll.size(1); ++k) out.push_back(r.nll[0][k].item<double>());
  }
  return out;
}

TEST(Interop, TheReferencesOwnStateDictsImportAndGiveItsNll) {
  const std::string dir = testing::scratch_dir("interop_reference");
  for (const std::string model : {"plain", "adaptive"}) {
    SCOPED_TRACE(model);
    const std::string run = dir + "/" + model;
    const auto r = run_txl({"import", "--weights", fixture(model, "state_dict.pt"), "--vocab",
                            fixture(model, "vocab.txt"), "--config", fixture(model, "config.json"),
                            "--run-dir", run});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("reference names"), std::string::npos) << r.out;
    const auto expected = nlohmann::json::parse(read_text(fixture(model, "expected.json")));
    const auto want = expected.at("nll").get<std::vector<double>>();
    const auto got = segment_nlls(run, expected);
    ASSERT_EQ(got.size(), want.size());
    double sum_got = 0, sum_want = 0;
    for (size_t k = 0; k < want.size(); ++k) {
      EXPECT_NEAR(got[k], want[k], 1e-5 * want[k]) << "token " << k;
      sum_got += got[k];
      sum_want += want[k];
    }
    EXPECT_NEAR(sum_got / sum_want, 1.0, 1e-6);
    double worst = 0;
    for (size_t k = 0; k < want.size(); ++k)
      worst = std::max(worst, std::abs(got[k] / want[k] - 1));
    std::printf("%s: mean NLL %.9f (reference %.9f), largest per-token relative difference %.2e\n",
                model.c_str(), sum_got / double(want.size()), sum_want / double(want.size()),
                worst);
    const auto origin = nlohmann::json::parse(read_text(run + "/origin.json"));
    EXPECT_EQ(origin.at("names"), "reference");
  }
  testing::cleanup_scratch();
}

TEST(Interop, ExportThenImportIsBitIdenticalUnderBothNamesAndFormats) {
  const std::string dir = testing::scratch_dir("interop_round_trip");
  const std::string corpus = testing::write_tiny_english_corpus(dir + "/corpus");
  const std::string run = dir + "/run";
  ASSERT_TRUE(testing::train_tiny_run(corpus, run, "relative", "char", 3));
  const auto base = run_txl({"eval", "--run", run, "--lengths", "16", "--checkpoint", "last"});
  ASSERT_EQ(base.code, 0) << base.err;
  for (const std::string names : {"txl", "reference"}) {
    for (const std::string ext : {".safetensors", ".pt"}) {
      SCOPED_TRACE(names + ext);
      const std::string stem = dir + "/" + names + "-" + ext.substr(1);
      const std::string out = stem + ext;
      auto r =
          run_txl({"export", "--run", run, "--out", out, "--names", names, "--checkpoint", "last"});
      ASSERT_EQ(r.code, 0) << r.err;
      // Every tensor of the model, under the names asked for.
      const WeightFile file = read_weight_file(out);
      bool reference_named = false;
      for (const auto& t : file.tensors)
        reference_named |= t.name == "layers.0.dec_attn.qkv_net.weight";
      EXPECT_EQ(reference_named, names == "reference");
      const std::string back = dir + "/back-" + names + ext;
      r = run_txl({"import", "--weights", out, "--vocab", stem + ".vocab.txt", "--config",
                   stem + ".config.json", "--run-dir", back});
      ASSERT_EQ(r.code, 0) << r.err;
      expect_same_weights(run, back);
      const auto again = run_txl({"eval", "--run", back, "--lengths", "16"});
      ASSERT_EQ(again.code, 0) << again.err;
      EXPECT_NE(again.out.find("imported from " + fs::absolute(out).string()), std::string::npos)
          << again.out;
      const auto table = [](const std::string& text) {
        return text.substr(text.find("nonoverlap"));
      };
      EXPECT_EQ(table(again.out), table(base.out));
    }
  }
  testing::cleanup_scratch();
}

TEST(Interop, TheVocabularyTextKeepsEveryTokenThroughItsEscapes) {
  const std::string dir = testing::scratch_dir("interop_vocab");
  const Vocab vocab(TokenizerKind::kChar, {"<unk>", "\n", "\\", "\t", "a", "\\n", "\r"});
  write_text(dir + "/v.txt", vocab_text(vocab));
  EXPECT_EQ(read_vocab_text(dir + "/v.txt", TokenizerKind::kChar).tokens(), vocab.tokens());
  testing::cleanup_scratch();
}

// Writes `bytes` as a file.
std::string put(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::string u64(uint64_t v) {
  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(char((v >> (8 * i)) & 0xFF));
  return out;
}

// A zip archive as torch.save makes, whose data.pkl is `pickle`.
std::string torch_archive(const std::string& pickle) {
  std::string out;
  caffe2::serialize::PyTorchStreamWriter writer([&](const void* p, size_t n) {
    out.append(static_cast<const char*>(p), n);
    return n;
  });
  writer.writeRecord("data.pkl", pickle.data(), pickle.size());
  writer.writeEndOfFile();
  return out;
}

std::string safetensors_bytes(const std::string& header, const std::string& data) {
  return u64(header.size()) + header + data;
}

TEST(Interop, BadWeightFilesAndVocabulariesAreRefusedNamingTheProblemAndWriteNothing) {
  const std::string dir = testing::scratch_dir("interop_bad");
  const std::string corpus = testing::write_tiny_english_corpus(dir + "/corpus");
  const std::string run = dir + "/run";
  ASSERT_TRUE(testing::train_tiny_run(corpus, run, "relative", "char", 2));
  const std::string good = dir + "/m.safetensors";
  ASSERT_EQ(run_txl({"export", "--run", run, "--out", good}).code, 0);
  const std::string bytes = read_text(good);
  const std::string config = dir + "/m.config.json", vocab = dir + "/m.vocab.txt";
  const std::string f32 = R"("dtype":"F32","shape":[2])";
  std::string nan_file = bytes;  // the last 4 bytes: a float of the last tensor
  const float nan = std::nanf("");
  std::memcpy(&nan_file[nan_file.size() - 4], &nan, 4);
  const std::string dup_vocab = read_text(vocab) + "<unk>\n";
  std::string short_vocab = read_text(vocab);
  short_vocab = short_vocab.substr(0, short_vocab.rfind('\n', short_vocab.size() - 2) + 1);
  struct Case {
    std::string name, weights, vocab, needle;
    std::vector<std::string> extra;
  };
  const std::vector<Case> cases = {
      {"truncated", put(dir + "/t.safetensors", bytes.substr(0, bytes.size() / 2)), vocab,
       "not a range inside"},
      {"header past the end", put(dir + "/h.safetensors", u64(1000) + "{}"), vocab,
       "runs past the end"},
      {"header of GBs", put(dir + "/g.safetensors", u64(uint64_t{5} << 30) + "{}"), vocab,
       "a header of"},
      {"too short", put(dir + "/s.safetensors", "abc"), vocab, "too short"},
      {"overlap",
       put(dir + "/o.safetensors",
           safetensors_bytes(R"({"a":{)" + f32 + R"(,"data_offsets":[0,8]},"b":{)" + f32 +
                                 R"(,"data_offsets":[4,12]}})",
                             std::string(12, '\0'))),
       vocab, "overlaps"},
      {"out of range",
       put(dir + "/r.safetensors",
           safetensors_bytes(R"({"a":{)" + f32 + R"(,"data_offsets":[0,80]}})",
                             std::string(8, '\0'))),
       vocab, "not a range inside"},
      {"unknown dtype",
       put(dir + "/d.safetensors",
           safetensors_bytes(R"({"a":{"dtype":"F8","shape":[2],"data_offsets":[0,2]}})",
                             std::string(2, '\0'))),
       vocab, "dtype \"F8\""},
      {"shape and bytes",
       put(dir + "/b.safetensors",
           safetensors_bytes(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})",
                             std::string(8, '\0'))),
       vocab, "needs 12 bytes"},
      {"duplicate name",
       put(dir + "/n.safetensors",
           safetensors_bytes(R"({"a":{)" + f32 + R"(,"data_offsets":[0,8]},"a":{)" + f32 +
                                 R"(,"data_offsets":[0,8]}})",
                             std::string(8, '\0'))),
       vocab, "duplicate key"},
      {"not json", put(dir + "/j.safetensors", safetensors_bytes("{nope", "")), vocab, "not JSON"},
      {"wrong tensors",
       put(dir + "/w.safetensors",
           safetensors_bytes(R"({"a":{)" + f32 + R"(,"data_offsets":[0,8]}})",
                             std::string(8, '\0'))),
       vocab, "missing: embedding.weight"},
      {"legacy torch", put(dir + "/l.pt", std::string("\x80\x02\x8a\x0a", 4) + "rest"), vocab,
       "legacy format"},
      {"not a zip", put(dir + "/z.pt", "PK\x03\x04garbage"), vocab, "not a torch.save archive"},
      // A pickle that would run a shell command is refused by name; nothing is called.
      {"code in the pickle",
       put(dir + "/code.pt", torch_archive(std::string("\x80\x02") + "cos\nsystem\n)R.")), vocab,
       "refers to os.system"},
      {"not a dict", put(dir + "/list.pt", torch_archive(std::string("\x80\x02") + "].")), vocab,
       "holds a list"},
      {"nan", put(dir + "/nan.safetensors", nan_file), vocab, "--allow-nonfinite"},
      {"vocab twice", good, put(dir + "/dup.txt", dup_vocab), "was already given"},
      {"vocab short", good, put(dir + "/short.txt", short_vocab), "in the file but"},
      {"vocab empty line", good, put(dir + "/empty.txt", "<unk>\n\na\n"), "an empty line"},
      {"vocab no unk", good, put(dir + "/nounk.txt", "a\nb\n"), "no <unk>"},
      {"weights a directory", dir, vocab, "a directory"},
      {"bad names", good, vocab, "--names \"ref\"", {"--names", "ref"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string target = dir + "/imported";
    std::vector<std::string> args = {"import",   "--weights", c.weights,   "--vocab", c.vocab,
                                     "--config", config,      "--run-dir", target};
    for (const auto& e : c.extra) args.push_back(e);
    const auto r = run_txl(args);
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_NE(r.err.find(c.needle), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(target)) << "a run directory was written";
  }
  // NaN imports when asked; a non-empty run directory needs --force.
  const std::string target = dir + "/imported";
  EXPECT_EQ(run_txl({"import", "--weights", dir + "/nan.safetensors", "--vocab", vocab, "--config",
                     config, "--run-dir", target, "--allow-nonfinite"})
                .code,
            0);
  const auto again = run_txl(
      {"import", "--weights", good, "--vocab", vocab, "--config", config, "--run-dir", target});
  EXPECT_EQ(again.code, 2);
  EXPECT_NE(again.err.find("--force"), std::string::npos) << again.err;
  // Export never writes over the run's own files, nor over a file without --force.
  const std::string before = read_text(run + "/best.pt");
  auto r = run_txl({"export", "--run", run, "--out", run + "/best.pt", "--force"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("the run's own best.pt"), std::string::npos) << r.err;
  EXPECT_EQ(read_text(run + "/best.pt"), before);
  r = run_txl({"export", "--run", run, "--out", good});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("exists; pass --force"), std::string::npos) << r.err;
  r = run_txl({"export", "--run", run, "--out", dir + "/m.bin"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find(".safetensors"), std::string::npos) << r.err;
  testing::cleanup_scratch();
}

// Damaged files, byte by byte: every one is read or refused with an InputError, never a crash
// or another exception (LibTorch's zip reader and the unpickler included).
TEST(Interop, EveryDamagedByteIsReadOrRefusedAsBadInput) {
  std::vector<NamedTensor> tensors = {{"a", torch::arange(6, torch::kFloat32).view({2, 3})},
                                      {"b.c", torch::ones({4}, torch::kFloat64)}};
  const std::string dir = testing::scratch_dir("interop_damage");
  write_safetensors(dir + "/w.safetensors", tensors, {{"k", "v"}});
  write_torch_dict(dir + "/w.pt", tensors);
  for (const std::string file : {"/w.safetensors", "/w.pt"}) {
    const std::string bytes = read_text(dir + file);
    EXPECT_EQ(parse_weight_file(bytes, file).tensors.size(), 2u);
    uint64_t state = 12345;
    int refused = 0;
    for (int trial = 0; trial < 400; ++trial) {
      std::string damaged = bytes;
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      const size_t at = (state >> 33) % damaged.size();
      damaged[at] = static_cast<char>(damaged[at] ^ (1 + ((state >> 20) % 255)));
      if (trial % 7 == 0) damaged.resize(at);  // truncated there instead
      try {
        parse_weight_file(damaged, file);
      } catch (const InputError&) {
        ++refused;
      } catch (const std::exception& e) {
        ADD_FAILURE() << file << " byte " << at << ": " << e.what();
      }
    }
    EXPECT_GT(refused, 50) << file;
  }
  testing::cleanup_scratch();
}

TEST(Interop, ReferenceNamesRefuseWhatTheReferenceCannotHold) {
  const std::string dir = testing::scratch_dir("interop_refuse");
  const std::string corpus = testing::write_tiny_english_corpus(dir + "/corpus");
  const std::string run = dir + "/rope";
  ASSERT_TRUE(testing::train_tiny_run(corpus, run, "rope", "char", 1));
  const auto r =
      run_txl({"export", "--run", run, "--out", dir + "/x.safetensors", "--names", "reference"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("model.pos_encoding \"relative\""), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir + "/x.safetensors"));
  EXPECT_EQ(run_txl({"export", "--run", run, "--out", dir + "/x.safetensors"}).code, 0);
  testing::cleanup_scratch();
}

}  // namespace
}  // namespace txl
