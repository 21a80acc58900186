#include "txl/data/token_cache.h"

#include <fcntl.h>
#include <spdlog/fmt/fmt.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "txl/util/env.h"
#include "txl/util/error.h"
#include "txl/util/fs.h"
#include "txl/util/hash.h"

namespace txl {

namespace {

namespace fs = std::filesystem;

// ids file: magic, version, reserved, text XXH64, vocabulary checksum, count, unknown
// count, XXH64 of the ids, then `count` little-endian int32 ids.
constexpr char kMagic[8] = {'T', 'X', 'L', 'T', 'O', 'K', 'S', '\n'};
constexpr uint32_t kVersion = 1;
constexpr size_t kHeaderBytes = 8 + 4 + 4 + 8 + 8 + 8 + 8 + 8;
constexpr bool kLittleEndian = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;

// What shapes a vocabulary besides the training text.
uint64_t settings_hash(const DataConfig& c) {
  Fnv1a64 h;
  h.add(to_string(c.tokenizer) + "|" + std::to_string(c.min_freq) + "|" +
        std::to_string(c.max_vocab) + "|" + std::to_string(c.vocab_size) + "|" +
        std::to_string(kSubwordTrainThreads));
  return h.value();
}

std::string vocab_entry(const std::string& dir, uint64_t train_xxh64, const DataConfig& c) {
  return dir + "/vocab/" + to_string(c.tokenizer) + "-" + hex64(settings_hash(c)) + "-" +
         hex64(train_xxh64);
}

// A read-only memory map of a whole file, unmapped on destruction.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path) {
    // O_NONBLOCK: a FIFO put in the cache must not block the read; it is no entry.
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st {};
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
      size_ = static_cast<size_t>(st.st_size);
      void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      data_ = p == MAP_FAILED ? nullptr : static_cast<const unsigned char*>(p);
    }
    ::close(fd);
  }
  ~MappedFile() {
    if (data_ != nullptr) ::munmap(const_cast<unsigned char*>(data_), size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const unsigned char* data() const { return data_; }
  size_t size() const { return data_ != nullptr ? size_ : 0; }
  // Copies bytes [offset, offset + n) to `out` block by block, telling the kernel after each
  // block that its pages are no longer needed (they leave this process's resident memory).
  void copy_out(size_t offset, void* out, size_t n) const {
    constexpr size_t kBlock = size_t{8} << 20;
    const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    auto* to = static_cast<unsigned char*>(out);
    size_t dropped = 0;
    for (size_t done = 0; done < n;) {
      const size_t len = std::min(kBlock, n - done);
      std::memcpy(to + done, data_ + offset + done, len);
      done += len;
      const size_t end = (offset + done) / page * page;  // whole pages copied so far
      if (end > dropped) {
        ::madvise(const_cast<unsigned char*>(data_) + dropped, end - dropped, MADV_DONTNEED);
        dropped = end;
      }
    }
  }

 private:
  const unsigned char* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace

std::string token_cache_dir() {
  if (const auto dir = env_text("TXL_CACHE_DIR")) return *dir == "off" ? "" : *dir;
  if (const auto xdg = env_text("XDG_CACHE_HOME")) return *xdg + "/txl";
  if (const auto home = env_text("HOME")) return *home + "/.cache/txl";
  return "";
}

std::string cached_ids_path(const std::string& cache_dir, const SplitKey& key) {
  return cache_dir + "/tokens/" + hex64(key.vocab_checksum) + "-" + hex64(key.text_xxh64) + ".ids";
}

std::optional<TokenizedSplit> read_cached_ids(const std::string& cache_dir, const SplitKey& key,
                                              std::string* problem) {
  const std::string path = cached_ids_path(cache_dir, key);
  if (!fs::exists(path)) return std::nullopt;
  const auto damaged = [&](const std::string& why) -> std::optional<TokenizedSplit> {
    if (problem != nullptr) *problem = path + ": " + why;
    return std::nullopt;
  };
  const MappedFile file(path);
  const unsigned char* p = file.data();
  if (file.size() < kHeaderBytes || std::memcmp(p, kMagic, sizeof kMagic) != 0) {
    return damaged("not a txl token file");
  }
  if (read_u32_le(p + 8) != kVersion) return damaged("written by another txl version");
  if (read_u64_le(p + 16) != key.text_xxh64 || read_u64_le(p + 24) != key.vocab_checksum) {
    return damaged("holds another split or vocabulary than its name says");
  }
  const uint64_t count = read_u64_le(p + 32);
  if (count > (file.size() - kHeaderBytes) / 4 || file.size() != kHeaderBytes + count * 4) {
    return damaged("truncated or padded (its size does not match its token count)");
  }
  const unsigned char* ids_bytes = p + kHeaderBytes;
  TokenizedSplit split;
  split.unknown = static_cast<int64_t>(read_u64_le(p + 40));
  if constexpr (kLittleEndian) {
    // Copied, then checked where they lie; the file's pages are dropped as they are copied,
    // so the ids are in memory about once, not twice.
    split.ids.resize(count);
    file.copy_out(kHeaderBytes, split.ids.data(), count * 4);
    if (xxh64(split.ids.data(), count * 4) != read_u64_le(p + 48)) {
      return damaged("damaged (its ids do not match their checksum)");
    }
    return split;
  }
  if (xxh64(ids_bytes, count * 4) != read_u64_le(p + 48)) {
    return damaged("damaged (its ids do not match their checksum)");
  }
  split.ids.resize(count);
  for (uint64_t i = 0; i < count; ++i) {
    split.ids[i] = static_cast<int32_t>(read_u32_le(ids_bytes + 4 * i));
  }
  return split;
}

namespace {

// An ids file's header (the layout above kMagic); `ids_xxh64` is the XXH64 of the ids as
// little-endian bytes.
std::string ids_header(const SplitKey& key, const TokenizedSplit& split, uint64_t ids_xxh64) {
  std::string out(kMagic, sizeof kMagic);
  put_u32_le(out, kVersion);
  put_u32_le(out, 0);
  put_u64_le(out, key.text_xxh64);
  put_u64_le(out, key.vocab_checksum);
  put_u64_le(out, split.ids.size());
  put_u64_le(out, static_cast<uint64_t>(split.unknown));
  put_u64_le(out, ids_xxh64);
  return out;
}

// Writes an ids file at `path` (through a temporary file and a rename). On a little-endian
// machine the ids are written and hashed where they lie: a 100-million-token split is 400 MB,
// and a copy of it was the largest part of a first tokenizing's peak memory.
void write_ids_file(const std::string& path, const SplitKey& key, const TokenizedSplit& split) {
  const std::vector<int32_t>& ids = split.ids;
  if constexpr (kLittleEndian) {
    const std::string_view payload(reinterpret_cast<const char*>(ids.data()), ids.size() * 4);
    const std::string header = ids_header(key, split, xxh64(payload.data(), payload.size()));
    write_file_atomic(path, std::vector<std::string_view>{header, payload});
  } else {
    std::string payload;
    payload.reserve(ids.size() * 4);
    for (const int32_t id : ids) put_u32_le(payload, static_cast<uint32_t>(id));
    write_file_atomic(path,
                      ids_header(key, split, xxh64(payload.data(), payload.size())) + payload);
  }
}

// Writes an ids entry's file at `path`, making its folder; "" or why it could not.
std::string write_ids_entry(const std::string& path, const SplitKey& key,
                            const TokenizedSplit& split) {
  try {
    fs::create_directories(fs::path(path).parent_path());
    write_ids_file(path, key, split);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

std::string write_cached_ids(const std::string& cache_dir, const SplitKey& key,
                             const TokenizedSplit& split) {
  return write_ids_entry(cached_ids_path(cache_dir, key), key, split);
}

TokenCacheWrites::~TokenCacheWrites() {
  for (const auto& path : pending_) ::unlink(path.c_str());  // gone already once committed
  for (const auto& dir : made_dirs_) ::rmdir(dir.c_str());   // kept where an entry is in it
}

void TokenCacheWrites::add_ids(const std::string& cache_dir, const SplitKey& key,
                               const TokenizedSplit& split) {
  const std::string path = cached_ids_path(cache_dir, key);
  for (fs::path dir = fs::path(path).parent_path(); !dir.empty() && !fs::exists(dir);
       dir = dir.parent_path()) {
    made_dirs_.push_back(dir.string());  // deepest first
  }
  const std::string pending =
      path + ".pending." + std::to_string(::getpid()) + "." + std::to_string(pending_.size());
  if (std::string failed = write_ids_entry(pending, key, split); !failed.empty()) {
    writes_.push_back([failed] { return failed; });
    return;
  }
  pending_.push_back(pending);
  writes_.push_back([pending, path]() -> std::string {
    if (std::rename(pending.c_str(), path.c_str()) == 0) return "";
    return "cannot move " + pending + " to " + path + ": " + std::strerror(errno);
  });
}

void TokenCacheWrites::add_vocab(const std::string& cache_dir, uint64_t train_xxh64,
                                 const DataConfig& config, const Vocab& vocab) {
  writes_.push_back([=] { return write_cached_vocab(cache_dir, train_xxh64, config, vocab); });
}

void TokenCacheWrites::commit() {
  for (const auto& write : writes_) {
    if (const std::string failed = write(); !failed.empty())
      fmt::print(stderr, "warning: token cache: {}\n", failed);
  }
  writes_.clear();
}

std::optional<Vocab> read_cached_vocab(const std::string& cache_dir, uint64_t train_xxh64,
                                       const DataConfig& config, std::string* problem) {
  const std::string path = vocab_entry(cache_dir, train_xxh64, config) + "/vocab.json";
  if (!fs::exists(path)) return std::nullopt;
  try {
    Vocab vocab = Vocab::load(path);
    if (vocab.kind() != config.tokenizer)
      throw InputError(path + ": another tokenizer's vocabulary");
    return vocab;
  } catch (const InputError& e) {
    if (problem != nullptr) *problem = e.what();
    return std::nullopt;
  }
}

std::string write_cached_vocab(const std::string& cache_dir, uint64_t train_xxh64,
                               const DataConfig& config, const Vocab& vocab) {
  const std::string dir = vocab_entry(cache_dir, train_xxh64, config);
  try {
    fs::create_directories(dir);
    vocab.save(dir + "/vocab.json");
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace txl
