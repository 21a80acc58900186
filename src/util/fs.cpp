#include "txl/util/fs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include "txl/util/error.h"

namespace txl {

namespace {

std::string errno_text() { return std::strerror(errno); }

FileKind kind_of(mode_t mode) {
  if (S_ISREG(mode)) return FileKind::kRegular;
  if (S_ISDIR(mode)) return FileKind::kDirectory;
  if (S_ISFIFO(mode)) return FileKind::kFifo;
  if (S_ISSOCK(mode)) return FileKind::kSocket;
  if (S_ISCHR(mode)) return FileKind::kCharDevice;
  if (S_ISBLK(mode)) return FileKind::kBlockDevice;
  return FileKind::kOther;
}

// Linux's own limit on links followed in one lookup (MAXSYMLINKS).
constexpr int kMaxLinks = 40;

}  // namespace

FileKind file_kind(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) return kind_of(st.st_mode);
  return errno == ENOENT || errno == ENOTDIR ? FileKind::kMissing : FileKind::kOther;
}

std::string describe(FileKind kind) {
  switch (kind) {
    case FileKind::kMissing:
      return "missing";
    case FileKind::kRegular:
      return "a regular file";
    case FileKind::kDirectory:
      return "a directory";
    case FileKind::kFifo:
      return "a FIFO (named pipe)";
    case FileKind::kSocket:
      return "a socket";
    case FileKind::kCharDevice:
      return "a character device";
    case FileKind::kBlockDevice:
      return "a block device";
    case FileKind::kOther:
      break;
  }
  return "not a file txl can use (a loop of links, or no permission to look)";
}

std::string link_target(const std::string& path) {
  std::string current = path;
  for (int hops = 0; hops < kMaxLinks; ++hops) {
    struct stat st {};
    if (::lstat(current.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return current;
    std::vector<char> buf(static_cast<size_t>(st.st_size > 0 ? st.st_size : 255) + 1);
    const ssize_t n = ::readlink(current.c_str(), buf.data(), buf.size());
    if (n < 0 || static_cast<size_t>(n) >= buf.size()) return current;  // changed meanwhile
    const std::string target(buf.data(), static_cast<size_t>(n));
    const size_t slash = current.rfind('/');
    current = target.empty() || target.front() == '/' || slash == std::string::npos
                  ? target
                  : current.substr(0, slash + 1) + target;
  }
  throw InputError(path + ": too many levels of symbolic links (a loop?)");
}

void check_not_special(const std::string& path, const std::string& expected) {
  const FileKind kind = file_kind(path);
  if (kind == FileKind::kMissing || kind == FileKind::kRegular) return;
  throw InputError(path + ": is " + describe(kind) + ", expected " + expected);
}

int open_regular_file(const std::string& path, const std::string& expected, uint64_t* size) {
  const FileKind kind = file_kind(path);
  if (kind == FileKind::kMissing) throw InputError(path + ": no such file");
  check_not_special(path, expected);
  // O_NONBLOCK: opening a FIFO put there since the check returns at once instead of waiting
  // for a writer; fstat then sees it on the descriptor itself.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw InputError(path + ": cannot open: " + errno_text());
  struct stat st {};
  const FileKind opened = ::fstat(fd, &st) == 0 ? kind_of(st.st_mode) : FileKind::kOther;
  if (opened != FileKind::kRegular) {
    ::close(fd);
    throw InputError(path + ": is " + describe(opened) + ", expected " + expected);
  }
  *size = static_cast<uint64_t>(st.st_size);
  return fd;
}

std::string read_regular_file(const std::string& path, const std::string& expected) {
  uint64_t size = 0;
  const int fd = open_regular_file(path, expected, &size);
  std::string text;
  text.reserve(static_cast<size_t>(size));
  char buf[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      const std::string why = errno_text();
      ::close(fd);
      throw InputError(path + ": cannot read: " + why);
    }
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return text;
}

void write_file_atomic(const std::string& given, const std::string& content) {
  write_file_atomic(given, std::vector<std::string_view>{content});
}

void write_file_atomic(const std::string& given, const std::vector<std::string_view>& pieces) {
  write_file_atomic(given, [&](FileSink& file) {
    for (const std::string_view content : pieces) file.write(content.data(), content.size());
  });
}

namespace {

// The temporary file write_file_atomic fills; a failed write throws naming it.
class FdSink final : public FileSink {
 public:
  FdSink(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  void write(const void* data, size_t size) override {
    write_at(offset_, data, size);
    offset_ += size;
  }
  void write_at(uint64_t offset, const void* data, size_t size) override {
    const auto* p = static_cast<const char*>(data);
    size_t written = 0;
    while (written < size) {
      const ssize_t n =
          ::pwrite(fd_, p + written, size - written, static_cast<off_t>(offset + written));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw std::runtime_error("cannot write " + path_ + ": " + errno_text());
      written += static_cast<size_t>(n);
    }
  }

 private:
  int fd_;
  std::string path_;
  uint64_t offset_ = 0;
};

}  // namespace

void write_file_atomic(const std::string& given, const std::function<void(FileSink&)>& fill) {
  // Through a link to its target; only a regular file (or nothing) may be replaced.
  const std::string path = link_target(given);
  const FileKind kind = file_kind(path);
  if (kind != FileKind::kMissing && kind != FileKind::kRegular) {
    throw InputError((path == given ? given : given + " (a link to " + path + ")") + ": is " +
                     describe(kind) + "; txl writes only regular files and leaves it as it is");
  }
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot create " + tmp + ": " + errno_text());
  try {
    FdSink sink(fd, tmp);
    fill(sink);
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const std::string why = errno_text();
    ::unlink(tmp.c_str());
    throw std::runtime_error("cannot flush " + tmp + ": " + why);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = errno_text();
    ::unlink(tmp.c_str());
    throw std::runtime_error("cannot rename " + tmp + " to " + path + ": " + why);
  }
}

bool is_directory(const std::string& path) { return file_kind(path) == FileKind::kDirectory; }

std::string same_file_key(const std::string& path) {
  try {
    std::error_code ec;
    const auto p =
        std::filesystem::weakly_canonical(std::filesystem::absolute(link_target(path)), ec);
    return ec ? path : p.string();
  } catch (const InputError&) {
    return path;
  }
}

bool is_regular_file(const std::string& path) { return file_kind(path) == FileKind::kRegular; }

}  // namespace txl
