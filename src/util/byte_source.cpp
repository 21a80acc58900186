#include "txl/util/byte_source.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "txl/util/error.h"
#include "txl/util/fs.h"
#include "txl/util/hash.h"

namespace txl {

namespace {

void check_range(const ByteSource& s, uint64_t at, uint64_t n) {
  if (at > s.size() || n > s.size() - at)
    throw InputError(s.name() + ": bytes " + std::to_string(at) + ".." + std::to_string(at + n) +
                     " run past the end of the file (" + std::to_string(s.size()) + " bytes)");
}

class FileSource : public ByteSource {
 public:
  FileSource(int fd, uint64_t size, std::string name)
      : fd_(fd), size_(size), name_(std::move(name)) {}
  ~FileSource() override { ::close(fd_); }
  const std::string& name() const override { return name_; }
  uint64_t size() const override { return size_; }
  void read(uint64_t at, void* dst, uint64_t n) const override {
    check_range(*this, at, n);
    auto* out = static_cast<char*>(dst);
    while (n > 0) {
      const ssize_t got = ::pread(fd_, out, static_cast<size_t>(std::min<uint64_t>(n, 1 << 30)),
                                  static_cast<off_t>(at));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0)
        throw InputError(name_ + ": cannot read bytes at " + std::to_string(at) + ": " +
                         (got < 0 ? std::strerror(errno) : "the file is shorter than it was"));
      out += got;
      at += static_cast<uint64_t>(got);
      n -= static_cast<uint64_t>(got);
    }
  }

 private:
  int fd_;
  uint64_t size_;
  std::string name_;
};

class StringSource : public ByteSource {
 public:
  StringSource(std::string bytes, std::string name)
      : bytes_(std::move(bytes)), name_(std::move(name)) {}
  const std::string& name() const override { return name_; }
  uint64_t size() const override { return bytes_.size(); }
  void read(uint64_t at, void* dst, uint64_t n) const override {
    check_range(*this, at, n);
    if (n > 0) std::memcpy(dst, bytes_.data() + at, n);
  }

 private:
  std::string bytes_;
  std::string name_;
};

}  // namespace

std::string ByteSource::read_string(uint64_t at, uint64_t n) const {
  check_range(*this, at, n);
  std::string out(static_cast<size_t>(n), '\0');
  read(at, out.data(), n);
  return out;
}

std::unique_ptr<ByteSource> open_file_source(const std::string& path, const std::string& expected) {
  uint64_t size = 0;
  const int fd = open_regular_file(path, expected, &size);
  return std::make_unique<FileSource>(fd, size, path);
}

std::unique_ptr<ByteSource> string_source(std::string bytes, const std::string& name) {
  return std::make_unique<StringSource>(std::move(bytes), name);
}

uint64_t xxh64_of(const ByteSource& source) {
  Xxh64 hash;
  std::vector<char> buf(4 << 20);
  for (uint64_t at = 0; at < source.size(); at += buf.size()) {
    const uint64_t n = std::min<uint64_t>(buf.size(), source.size() - at);
    source.read(at, buf.data(), n);
    hash.add(buf.data(), static_cast<size_t>(n));
  }
  return hash.value();
}

}  // namespace txl
