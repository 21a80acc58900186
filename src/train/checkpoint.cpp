#include "txl/train/checkpoint.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "txl/config/config.h"
#include "txl/util/error.h"
#include "txl/util/fs.h"

namespace txl {

namespace {

constexpr char kMagic[8] = {'T', 'X', 'L', 'C', 'K', 'P', 'T', '\n'};
constexpr size_t kHeaderSize = 48;

// ---------------------------------------------------------------------------------------------
// XXH64 (Yann Collet, https://github.com/Cyan4973/xxHash/blob/dev/doc/xxhash_spec.md):
// several GB/s, so checking a checkpoint costs little next to reading it.

constexpr uint64_t kP1 = 11400714785074694791ULL;
constexpr uint64_t kP2 = 14029467366897019727ULL;
constexpr uint64_t kP3 = 1609587929392839161ULL;
constexpr uint64_t kP4 = 9650029242287828579ULL;
constexpr uint64_t kP5 = 2870177450012600261ULL;

uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

uint64_t read_u64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

uint32_t read_u32(const unsigned char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

uint64_t xxh_round(uint64_t acc, uint64_t input) {
  acc += input * kP2;
  acc = rotl(acc, 31);
  return acc * kP1;
}

uint64_t xxh_merge(uint64_t acc, uint64_t value) {
  acc ^= xxh_round(0, value);
  return acc * kP1 + kP4;
}

// ---------------------------------------------------------------------------------------------
// The header.

struct Header {
  uint32_t version = 0;
  uint64_t meta_size = 0;
  uint64_t meta_hash = 0;
  uint64_t payload_size = 0;
  uint64_t payload_hash = 0;
};

std::string encode_header(const Header& h) {
  std::string out(kMagic, sizeof kMagic);
  put_u32(out, h.version);
  put_u32(out, 0);
  put_u64(out, h.meta_size);
  put_u64(out, h.meta_hash);
  put_u64(out, h.payload_size);
  put_u64(out, h.payload_hash);
  return out;
}

// What a file that is not a txl checkpoint looks like, for the message.
std::string foreign_kind(const std::string& head) {
  if (head.rfind("PK\x03\x04", 0) == 0) {
    return "a zip archive (a plain LibTorch archive, or a checkpoint from a txl older than "
           "format 2)";
  }
  const size_t first = head.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && (head[first] == '{' || head[first] == '[')) {
    return "it looks like a JSON file";
  }
  return "no TXLCKPT header";
}

// Checks magic, version and that the lengths account for exactly `file_size` bytes.
Header decode_header(const std::string& head, uint64_t file_size, const std::string& path) {
  if (file_size == 0) throw InputError(path + ": empty file, not a txl checkpoint");
  if (head.size() < sizeof kMagic && std::memcmp(head.data(), kMagic, head.size()) == 0) {
    throw InputError(path + ": truncated: " + std::to_string(file_size) +
                     " bytes, shorter than the checkpoint header");
  }
  if (head.size() < sizeof kMagic || std::memcmp(head.data(), kMagic, sizeof kMagic) != 0) {
    throw InputError(path + ": not a txl checkpoint (" + foreign_kind(head) + ")");
  }
  if (file_size < kHeaderSize) {
    throw InputError(path + ": truncated: " + std::to_string(file_size) +
                     " bytes, shorter than the " + std::to_string(kHeaderSize) +
                     "-byte checkpoint header");
  }
  const auto* p = reinterpret_cast<const unsigned char*>(head.data());
  Header h;
  h.version = read_u32(p + 8);
  h.meta_size = read_u64(p + 16);
  h.meta_hash = read_u64(p + 24);
  h.payload_size = read_u64(p + 32);
  h.payload_hash = read_u64(p + 40);
  if (h.version != static_cast<uint32_t>(kCheckpointVersion)) {
    throw InputError(path + ": checkpoint format version " + std::to_string(h.version) +
                     ", this txl reads version " + std::to_string(kCheckpointVersion));
  }
  if (read_u32(p + 12) != 0) {
    throw InputError(path + ": corrupted: the reserved header field is not zero");
  }
  const uint64_t body = file_size - kHeaderSize;
  // Compared one at a time so corrupted huge lengths cannot overflow the sum.
  if (h.meta_size > body || h.payload_size > body - h.meta_size) {
    throw InputError(path + ": truncated or corrupted: the header announces " +
                     std::to_string(h.meta_size) + " + " + std::to_string(h.payload_size) +
                     " bytes after it, the file holds " + std::to_string(body));
  }
  if (h.meta_size + h.payload_size != body) {
    throw InputError(path + ": corrupted: " + std::to_string(body - h.meta_size - h.payload_size) +
                     " unexpected bytes after the checkpoint data");
  }
  return h;
}

void check_hash(const char* data, uint64_t size, uint64_t expected, const char* what,
                const std::string& path) {
  if (xxh64(data, size) != expected) {
    throw InputError(path + ": corrupted: the checksum of the " + what +
                     " does not match (the file was damaged after it was written)");
  }
}

// Reads `size` bytes at `offset`, or throws InputError naming the file.
std::string read_range(std::ifstream& in, uint64_t offset, uint64_t size, const std::string& path) {
  std::string bytes;
  try {
    bytes.resize(size);
  } catch (const std::exception&) {
    throw InputError(path + ": cannot allocate " + std::to_string(size) + " bytes to read it");
  }
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  if (static_cast<uint64_t>(in.gcount()) != size) {
    throw InputError(path +
                     ": cannot read checkpoint (short read; the file changed while reading?)");
  }
  return bytes;
}

// Opens the file and measures it through the same descriptor: a checkpoint replaced (renamed
// over) while an evaluation reads it is then read whole, old or new, never half of each.
std::ifstream open_file(const std::string& path, uint64_t* size) {
  if (is_directory(path)) throw InputError(path + ": is a directory, expected a checkpoint file");
  if (!is_regular_file(path)) throw InputError(path + ": checkpoint file not found");
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw InputError(path + ": cannot open checkpoint: " + std::strerror(errno));
  const std::streamoff end = in.tellg();
  if (end < 0) throw InputError(path + ": cannot read checkpoint (cannot measure it)");
  *size = static_cast<uint64_t>(end);
  return in;
}

// The file's meta JSON text, with header and meta checksum verified. When `payload` is given,
// the payload is read and verified too.
std::string read_verified(const std::string& path, std::string* payload) {
  uint64_t size = 0;
  auto in = open_file(path, &size);
  const std::string head = read_range(in, 0, std::min<uint64_t>(size, kHeaderSize), path);
  const Header h = decode_header(head, size, path);
  std::string meta = read_range(in, kHeaderSize, h.meta_size, path);
  check_hash(meta.data(), meta.size(), h.meta_hash, "metadata", path);
  if (payload) {
    *payload = read_range(in, kHeaderSize + h.meta_size, h.payload_size, path);
    check_hash(payload->data(), payload->size(), h.payload_hash, "tensor data", path);
  }
  return meta;
}

// ---------------------------------------------------------------------------------------------
// The meta block.

nlohmann::json model_config_json(const ModelConfig& model) {
  Config c;
  c.model = model;
  return config_to_json(c).at("model");
}

nlohmann::json optimizer_groups_json(torch::optim::Optimizer* optimizer) {
  nlohmann::json groups = nlohmann::json::array();
  if (!optimizer) return groups;
  for (auto& group : optimizer->param_groups()) {
    auto* adamw = dynamic_cast<torch::optim::AdamWOptions*>(&group.options());
    if (!adamw) continue;
    groups.push_back({{"lr", adamw->lr()},
                      {"beta1", std::get<0>(adamw->betas())},
                      {"beta2", std::get<1>(adamw->betas())},
                      {"eps", adamw->eps()},
                      {"weight_decay", adamw->weight_decay()},
                      {"amsgrad", adamw->amsgrad()}});
  }
  return groups;
}

void restore_optimizer_groups(const nlohmann::json& groups, torch::optim::Optimizer& optimizer,
                              const std::string& path) {
  auto& live = optimizer.param_groups();
  if (!groups.is_array() || groups.size() != live.size()) {
    throw InputError(path + ": the checkpoint's optimizer has " +
                     std::to_string(groups.is_array() ? groups.size() : 0) +
                     " parameter groups, this run's has " + std::to_string(live.size()));
  }
  for (size_t i = 0; i < live.size(); ++i) {
    auto* adamw = dynamic_cast<torch::optim::AdamWOptions*>(&live[i].options());
    if (!adamw) continue;
    const auto& g = groups[i];
    adamw->lr(g.at("lr").get<double>());
    adamw->betas({g.at("beta1").get<double>(), g.at("beta2").get<double>()});
    adamw->eps(g.at("eps").get<double>());
    adamw->weight_decay(g.at("weight_decay").get<double>());
    adamw->amsgrad(g.at("amsgrad").get<bool>());
  }
}

nlohmann::json meta_json(const TrainState& s, const TransformerLM& model,
                         torch::optim::Optimizer* optimizer, const Memory& memory) {
  return {{"format", kCheckpointFormat},
          {"version", kCheckpointVersion},
          {"step", s.step},
          {"tokens_seen", s.tokens_seen},
          {"stream_position", s.stream_position},
          {"best_valid_ppl", s.best_valid_ppl},
          {"config", s.config},
          // 64-bit values as text: JSON readers elsewhere may hold numbers as doubles.
          {"vocab_checksum", std::to_string(s.vocab_checksum)},
          {"lr", s.lr},
          {"skipped_steps", s.skipped_steps},
          {"train_tokens", s.train_tokens},
          {"train_checksum", std::to_string(s.train_checksum)},
          {"interval",
           {{"loss_sum", s.interval_loss_sum},
            {"steps", s.interval_steps},
            {"finite", s.interval_finite},
            {"seconds", s.interval_seconds}}},
          {"model_config", model_config_json(model->config())},
          {"vocab_size", model->vocab_size()},
          {"memory_layers", memory.layers.size()},
          {"optimizer_groups", optimizer_groups_json(optimizer)}};
}

uint64_t parse_u64_text(const nlohmann::json& j) {
  const std::string text = j.get<std::string>();
  size_t used = 0;
  const unsigned long long v = std::stoull(text, &used);
  if (used != text.size()) throw std::invalid_argument("not an unsigned integer: " + text);
  return v;
}

int64_t non_negative(const nlohmann::json& j, const char* key) {
  const int64_t v = j.at(key).get<int64_t>();
  if (v < 0) throw std::invalid_argument(std::string(key) + " is negative");
  return v;
}

TrainState state_from_meta(const nlohmann::json& j, const std::string& path) {
  const auto format = j.is_object() ? j.find("format") : j.end();
  if (!j.is_object() || format == j.end() || !format->is_string() || *format != kCheckpointFormat) {
    throw InputError(path + ": not a txl checkpoint (format tag missing)");
  }
  try {
    TrainState s;
    s.step = non_negative(j, "step");
    s.tokens_seen = non_negative(j, "tokens_seen");
    s.stream_position = non_negative(j, "stream_position");
    s.best_valid_ppl = j.at("best_valid_ppl").get<double>();
    s.config = j.at("config");
    s.vocab_checksum = parse_u64_text(j.at("vocab_checksum"));
    s.lr = j.at("lr").get<double>();
    s.skipped_steps = non_negative(j, "skipped_steps");
    s.train_tokens = non_negative(j, "train_tokens");
    s.train_checksum = parse_u64_text(j.at("train_checksum"));
    const auto& interval = j.at("interval");
    s.interval_loss_sum = interval.at("loss_sum").get<double>();
    s.interval_steps = non_negative(interval, "steps");
    s.interval_finite = non_negative(interval, "finite");
    s.interval_seconds = interval.at("seconds").get<double>();
    return s;
  } catch (const std::exception& e) {
    throw InputError(path + ": checkpoint metadata is incomplete or malformed (" + e.what() + ")");
  }
}

nlohmann::json parse_meta(const std::string& text, const std::string& path) {
  try {
    return nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    throw InputError(path + ": checkpoint metadata is not valid JSON (" + e.what() + ")");
  }
}

std::string join_lines(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? "; " : "") + items[i];
  return out;
}

// The checkpoint must have been written by a model of exactly this shape: a differing key
// would otherwise surface as an opaque tensor-size error from deep inside LibTorch, or, for
// keys that change no shape (dropout, pos_encoding between two relative variants), not at all.
void check_model_matches(const nlohmann::json& meta, const TransformerLM& model,
                         const std::string& path) {
  const nlohmann::json saved =
      meta.contains("model_config") ? meta.at("model_config") : nlohmann::json();
  nlohmann::json a = {{"model", saved}};
  nlohmann::json b = {{"model", model_config_json(model->config())}};
  const auto diffs = config_differences(a, b);
  if (!diffs.empty()) {
    throw InputError(path +
                     ": the checkpoint was written by a different model (checkpoint vs "
                     "this run: " +
                     join_lines(diffs) + ")");
  }
  const auto found = meta.find("vocab_size");
  const int64_t vocab_size =
      found != meta.end() && found->is_number_integer() ? found->get<int64_t>() : -1;
  if (vocab_size != model->vocab_size()) {
    throw InputError(path + ": the checkpoint's vocabulary has " + std::to_string(vocab_size) +
                     " tokens, this run's has " + std::to_string(model->vocab_size()));
  }
}

}  // namespace

uint64_t xxh64(const void* data, size_t size, uint64_t seed) {
  const auto* p = static_cast<const unsigned char*>(data);
  const unsigned char* const end = p + size;
  uint64_t h;
  if (size >= 32) {
    uint64_t v1 = seed + kP1 + kP2, v2 = seed + kP2, v3 = seed, v4 = seed - kP1;
    const unsigned char* const limit = end - 32;
    do {
      v1 = xxh_round(v1, read_u64(p));
      v2 = xxh_round(v2, read_u64(p + 8));
      v3 = xxh_round(v3, read_u64(p + 16));
      v4 = xxh_round(v4, read_u64(p + 24));
      p += 32;
    } while (p <= limit);
    h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
    h = xxh_merge(h, v1);
    h = xxh_merge(h, v2);
    h = xxh_merge(h, v3);
    h = xxh_merge(h, v4);
  } else {
    h = seed + kP5;
  }
  h += static_cast<uint64_t>(size);
  while (p + 8 <= end) {
    h ^= xxh_round(0, read_u64(p));
    h = rotl(h, 27) * kP1 + kP4;
    p += 8;
  }
  if (p + 4 <= end) {
    h ^= static_cast<uint64_t>(read_u32(p)) * kP1;
    h = rotl(h, 23) * kP2 + kP3;
    p += 4;
  }
  while (p < end) {
    h ^= static_cast<uint64_t>(*p) * kP5;
    h = rotl(h, 11) * kP1;
    ++p;
  }
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  h *= kP3;
  h ^= h >> 32;
  return h;
}

std::vector<std::string> config_differences(const nlohmann::json& a, const nlohmann::json& b,
                                            const std::vector<std::string>& ignore) {
  std::vector<std::string> out;
  auto shown = [](const nlohmann::json* v) { return v ? v->dump() : std::string("(absent)"); };
  auto compare_key = [&](const std::string& path, const nlohmann::json* x,
                         const nlohmann::json* y) {
    if (std::find(ignore.begin(), ignore.end(), path) != ignore.end()) return;
    if (x && y && *x == *y) return;
    out.push_back(path + ": " + shown(x) + " vs " + shown(y));
  };
  if (!a.is_object() || !b.is_object()) {
    if (a != b) out.push_back("(whole config): " + a.dump() + " vs " + b.dump());
    return out;
  }
  // Union of sections and keys, in a's order first, then keys only b has.
  auto sections = [&](const nlohmann::json& j, std::vector<std::string>& names) {
    for (const auto& item : j.items()) {
      if (std::find(names.begin(), names.end(), item.key()) == names.end())
        names.push_back(item.key());
    }
  };
  std::vector<std::string> names;
  sections(a, names);
  sections(b, names);
  for (const auto& section : names) {
    const nlohmann::json* sa = a.contains(section) ? &a.at(section) : nullptr;
    const nlohmann::json* sb = b.contains(section) ? &b.at(section) : nullptr;
    if (!sa || !sb || !sa->is_object() || !sb->is_object()) {
      compare_key(section, sa, sb);
      continue;
    }
    std::vector<std::string> keys;
    sections(*sa, keys);
    sections(*sb, keys);
    for (const auto& key : keys) {
      compare_key(section + "." + key, sa->contains(key) ? &sa->at(key) : nullptr,
                  sb->contains(key) ? &sb->at(key) : nullptr);
    }
  }
  return out;
}

void save_checkpoint(const std::string& path, const TrainState& state, TransformerLM& model,
                     torch::optim::Optimizer* optimizer, const Memory& memory) {
  torch::serialize::OutputArchive archive;
  torch::serialize::OutputArchive model_archive;
  model->save(model_archive);
  archive.write("model", model_archive);
  if (optimizer) {
    torch::serialize::OutputArchive opt_archive;
    optimizer->save(opt_archive);
    archive.write("optimizer", opt_archive);
  }
  if (!memory.empty()) {
    torch::serialize::OutputArchive mem_archive;
    for (size_t l = 0; l < memory.layers.size(); ++l) {
      mem_archive.write(std::to_string(l), memory.layers[l], /*is_buffer=*/true);
    }
    archive.write("memory", mem_archive);
  }
  archive.write("rng", at::detail::getDefaultCPUGenerator().get_state(), /*is_buffer=*/true);
  std::ostringstream payload_stream;
  archive.save_to(payload_stream);
  const std::string payload = payload_stream.str();
  const std::string meta = meta_json(state, model, optimizer, memory).dump();

  Header h;
  h.version = static_cast<uint32_t>(kCheckpointVersion);
  h.meta_size = meta.size();
  h.meta_hash = xxh64(meta.data(), meta.size());
  h.payload_size = payload.size();
  h.payload_hash = xxh64(payload.data(), payload.size());
  std::string bytes = encode_header(h);
  bytes.reserve(bytes.size() + meta.size() + payload.size());
  bytes += meta;
  bytes += payload;
  write_file_atomic(path, bytes);
}

TrainState read_checkpoint_state(const std::string& path) {
  return state_from_meta(parse_meta(read_verified(path, nullptr), path), path);
}

void verify_checkpoint(const std::string& path) {
  std::string payload;
  state_from_meta(parse_meta(read_verified(path, &payload), path), path);
}

LoadedCheckpoint load_checkpoint(const std::string& path, TransformerLM& model,
                                 torch::optim::Optimizer* optimizer) {
  std::string payload;
  const nlohmann::json meta = parse_meta(read_verified(path, &payload), path);
  LoadedCheckpoint loaded;
  loaded.state = state_from_meta(meta, path);
  // The checksums passed, so the payload is what save_checkpoint wrote; LibTorch can still
  // refuse it (a checkpoint written by another LibTorch, or tensors that do not fit), and
  // its c10::Error carries a backtrace, not a message for the user.
  const char* stage = "the metadata";
  try {
    check_model_matches(meta, model, path);
    stage = "the archive";
    torch::serialize::InputArchive archive;
    archive.load_from(payload.data(), payload.size());
    stage = "the model weights";
    torch::serialize::InputArchive model_archive;
    archive.read("model", model_archive);
    model->load(model_archive);
    if (optimizer) {
      stage = "the optimizer state";
      torch::serialize::InputArchive opt_archive;
      if (!archive.try_read("optimizer", opt_archive)) {
        throw InputError(path +
                         ": holds weights only (no optimizer state); training cannot "
                         "resume from it");
      }
      optimizer->load(opt_archive);
      restore_optimizer_groups(meta.at("optimizer_groups"), *optimizer, path);
    }
    stage = "the memory";
    torch::serialize::InputArchive mem_archive;
    if (archive.try_read("memory", mem_archive)) {
      const int64_t layers = meta.at("memory_layers").get<int64_t>();
      for (int64_t l = 0; l < layers; ++l) {
        torch::Tensor t;
        mem_archive.read(std::to_string(l), t, /*is_buffer=*/true);
        loaded.memory.layers.push_back(t);
      }
    }
    stage = "the random generator state";
    torch::Tensor rng;
    if (archive.try_read("rng", rng, /*is_buffer=*/true)) {
      auto generator = at::detail::getDefaultCPUGenerator();  // a handle sharing the state
      generator.set_state(rng);
    }
  } catch (const InputError&) {
    throw;
  } catch (const c10::Error& e) {
    throw InputError(path + ": cannot load " + stage + " from the checkpoint (" +
                     e.what_without_backtrace() + ")");
  } catch (const std::exception& e) {
    throw InputError(path + ": cannot load " + stage + " from the checkpoint (" + e.what() + ")");
  }
  return loaded;
}

}  // namespace txl
