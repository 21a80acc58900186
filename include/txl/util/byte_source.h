// The bytes of a file read where they are needed, not all at once: a weight file's header is
// checked before any tensor is read, and each tensor's bytes are read only when it is. A
// 12 GiB file whose header is wrong costs its header, not 12 GiB (issue 54, cause 2).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace txl {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // The name in messages (the file's path).
  virtual const std::string& name() const = 0;
  virtual uint64_t size() const = 0;
  // Copies bytes [at, at + n) to `dst`. InputError naming the file when the range runs past
  // its end or the file cannot be read (it shrank since it was opened).
  virtual void read(uint64_t at, void* dst, uint64_t n) const = 0;
  // The same into a string; `n` is checked against size() before anything is allocated.
  std::string read_string(uint64_t at, uint64_t n) const;
};

// A regular file (after following links), opened once and read with pread. InputError for a
// missing file, a directory, a FIFO or a device, naming `path` and `expected` as
// read_regular_file does (util/fs.h).
std::unique_ptr<ByteSource> open_file_source(const std::string& path, const std::string& expected);

// Bytes already in memory (tests, and files read whole for other reasons).
std::unique_ptr<ByteSource> string_source(std::string bytes, const std::string& name);

// XXH64 of the whole source, read in pieces of a few MB.
uint64_t xxh64_of(const ByteSource& source);

}  // namespace txl
