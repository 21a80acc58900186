// Seeded random damage to a real checkpoint file: every change to its bytes must be refused
// with an InputError naming the file (the lengths and checksums catch it before LibTorch
// reads anything), and a payload that is damaged but carries a recomputed checksum (a forged
// file) must still give either a model or an InputError, never a crash.
// TXL_FUZZ_SEED / TXL_FUZZ_SCALE as in tests/base/input_fuzz_test.cpp.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "cli_harness.h"
#include "test_util.h"
#include "txl/run/checkpoint.h"
#include "txl/util/error.h"

namespace txl {
namespace {

uint64_t fuzz_seed() {
  const char* env = std::getenv("TXL_FUZZ_SEED");
  return env ? std::strtoull(env, nullptr, 10) : 20240611;
}

int scaled(int cases) {
  const char* env = std::getenv("TXL_FUZZ_SCALE");
  return cases * (env ? std::max(1, std::atoi(env)) : 1);
}

struct Sample {
  std::string dir;
  std::string bytes;
  ModelConfig config;
};

Sample make_sample() {
  Sample s;
  s.dir = testing::fresh_dir("ckpt_fuzz");
  s.config = testing::tiny_model(PosEncoding::kRelative);
  s.config.n_layer = 1;
  torch::manual_seed(5);
  TransformerLM model(s.config, 9);
  torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(0.01));
  Memory memory;
  ForwardOptions fwd;
  fwd.targets = torch::randint(9, {2, 4}, torch::kInt64);
  fwd.keep_memory = 4;
  auto out = model->forward(torch::randint(9, {2, 4}, torch::kInt64), memory, fwd);
  out.nll.mean().backward();
  optimizer.step();
  TrainState state;
  state.config = nlohmann::json::object();
  save_checkpoint(s.dir + "/sample.pt", state, model, &optimizer, out.memory);
  s.bytes = testing::read_text(s.dir + "/sample.pt");
  return s;
}

uint64_t get_u64(const std::string& b, size_t at) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[at + i]);
  return v;
}

void put_u64(std::string& b, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) b[at + i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}

// Loads `bytes` (written to a file) into a fresh model with optimizer. Returns true when it
// loaded; an InputError naming the file returns false; anything else fails the test.
bool try_load(const Sample& s, const std::string& bytes, const std::string& what) {
  // A new file each time: rewriting one in place is slow on ext4 (it flushes on truncate).
  static int counter = 0;
  const std::string path = s.dir + "/damaged" + std::to_string(counter++) + ".pt";
  testing::write_text(path, bytes);
  struct Remove {
    std::string p;
    ~Remove() { std::filesystem::remove(p); }
  } remove_after{path};
  TransformerLM model(s.config, 9);
  torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(0.01));
  try {
    load_checkpoint(path, model, &optimizer);
    return true;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    return false;
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": not an InputError: " << e.what();
    return false;
  }
}

TEST(CheckpointFuzz, EveryRandomDamageIsRefusedWithAnInputError) {
  const Sample s = make_sample();
  std::mt19937_64 rng(fuzz_seed());
  auto range = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  const int cases = scaled(400);
  for (int i = 0; i < cases; ++i) {
    std::string bytes = s.bytes;
    std::string what;
    for (int64_t m = range(1, 3); m > 0; --m) {
      const size_t pos = range(0, bytes.size() - 1);
      switch (range(0, 3)) {
        case 0:  // flip one bit
          bytes[pos] = static_cast<char>(bytes[pos] ^ (1 << range(0, 7)));
          what += " flip@" + std::to_string(pos);
          break;
        case 1:  // overwrite a run of bytes with different ones
          for (size_t k = pos; k < std::min(bytes.size(), pos + range(1, 16)); ++k)
            bytes[k] = static_cast<char>(~bytes[k]);
          what += " overwrite@" + std::to_string(pos);
          break;
        case 2:  // cut
          bytes.resize(pos);
          what += " cut@" + std::to_string(pos);
          break;
        default:  // insert
          bytes.insert(pos, std::string(range(1, 8), static_cast<char>(range(0, 255))));
          what += " insert@" + std::to_string(pos);
          break;
      }
      if (bytes.empty()) break;
    }
    if (bytes == s.bytes) continue;
    EXPECT_FALSE(try_load(s, bytes, what)) << "damaged file loaded:" << what;
    if (HasFailure()) break;
  }
}

TEST(CheckpointFuzz, ForgedPayloadsWithValidChecksumsNeverCrash) {
  const Sample s = make_sample();
  const size_t payload_at = 48 + get_u64(s.bytes, 16);
  std::mt19937_64 rng(fuzz_seed() + 1);
  auto range = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  int loaded = 0, refused = 0;
  const int cases = scaled(50);
  for (int i = 0; i < cases; ++i) {
    std::string bytes = s.bytes;
    const size_t pos = range(payload_at, bytes.size() - 1);
    for (size_t k = pos; k < std::min(bytes.size(), pos + range(1, 4)); ++k) {
      bytes[k] = static_cast<char>(range(0, 255));
    }
    put_u64(bytes, 40, xxh64(bytes.data() + payload_at, bytes.size() - payload_at));
    (try_load(s, bytes, "forged@" + std::to_string(pos)) ? loaded : refused) += 1;
    if (HasFailure()) break;
  }
  // Damage inside tensor data loads (the weights are just different); damage to the zip
  // structure or the pickled records is refused.
  EXPECT_GT(loaded + refused, 0);
  RecordProperty("loaded", loaded);
  RecordProperty("refused", refused);
}

}  // namespace
}  // namespace txl
