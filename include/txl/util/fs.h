// File-system helpers shared by every layer.
//
// txl reads and writes regular files only. A path that names a directory, a FIFO, a socket or
// a device where txl expects a file is refused, naming it and what it is: reading a FIFO
// would block until some other process writes to it (forever, with no output), and renaming
// a file over a device node or a socket would replace it. A symbolic link stands for its
// target: txl reads through it, and writes through it (the target is replaced, the link kept).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace txl {

// What a path names, after following symbolic links.
enum class FileKind {
  kMissing,  // nothing there (or a dangling link)
  kRegular,
  kDirectory,
  kFifo,
  kSocket,
  kCharDevice,
  kBlockDevice,
  kOther,  // cannot be told (e.g. a loop of links, or no permission to look)
};

FileKind file_kind(const std::string& path);

// "a directory", "a FIFO (named pipe)", "a socket", ... for messages; "missing" for kMissing.
std::string describe(FileKind kind);

// The file a path stands for: `path` itself, or the end of its chain of symbolic links
// (which need not exist yet). Only the last component is followed; a relative link is read
// from the link's folder. InputError naming `path` for a loop of links.
std::string link_target(const std::string& path);

// Reads a whole file that must be a regular file (after following links): missing, a
// directory, a FIFO, a device or unreadable throws InputError "PATH: ..." naming it and
// `expected` (e.g. "a text file", "a JSON file"). A FIFO that appears between the check and
// the open cannot block: the file is opened without waiting and checked again.
std::string read_regular_file(const std::string& path, const std::string& expected);

// The same checks, then the file opened for reading (O_CLOEXEC, never blocking on a FIFO) and
// its size in `size`, for a caller that reads it in pieces; the caller closes the descriptor.
int open_regular_file(const std::string& path, const std::string& expected, uint64_t* size);

// InputError "PATH: is a FIFO (named pipe), expected <expected>" when something other than a
// regular file is at `path` (after following links); nothing there is fine.
void check_not_special(const std::string& path, const std::string& expected);

// Writes `content` to `path` atomically: a temporary file in the same directory is written,
// flushed and fsync'ed, then renamed over `path`. A crash at any moment leaves either the
// old file or the new one, never a mix. A symbolic link is written through: its target is
// replaced, the link kept. Anything at the target but a regular file (a directory, a FIFO, a
// socket, a device) is refused with InputError before anything is written; other failures
// throw std::runtime_error naming the path.
void write_file_atomic(const std::string& path, const std::string& content);
// The same for content in pieces, written one after the other without joining them (a
// large payload need not be copied behind its header).
void write_file_atomic(const std::string& path, const std::vector<std::string_view>& pieces);

// Where the streaming form below writes: bytes appended in order, and bytes already written
// overwritten in place (a header whose lengths and checksums are known only at the end).
class FileSink {
 public:
  virtual ~FileSink() = default;
  virtual void write(const void* data, size_t size) = 0;
  virtual void write_at(uint64_t offset, const void* data, size_t size) = 0;
};
// The same, for content `fill` produces piece by piece (a checkpoint's tensors straight
// from their memory): never held whole. An exception from `fill` removes the temporary file
// and leaves `path` as it was.
void write_file_atomic(const std::string& path, const std::function<void(FileSink&)>& fill);

// The file or folder a path names, as text two paths can be compared by (the same text: the
// same file): absolute, links followed (a dangling last link too), `.` and `..` gone; the path
// as given where it cannot be resolved (a loop of links).
std::string same_file_key(const std::string& path);

bool is_directory(const std::string& path);
bool is_regular_file(const std::string& path);

}  // namespace txl
