// The entries of a zip archive as torch.save writes it, read from its central directory
// without reading any entry: each entry's name, where its bytes start and how many there
// are. torch.save stores its records uncompressed (each aligned for memory mapping), so an
// entry that is compressed, an entry named twice, or one whose bytes run past the file is
// refused before anything is inflated or allocated (issue 54, cause 1: a deflated 2.5 GiB
// storage of zeros in a 2.9 MB file).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "txl/util/byte_source.h"

namespace txl {

struct ZipEntry {
  uint64_t data_at = 0;  // offset of the entry's first byte in the archive
  uint64_t bytes = 0;
};

class ZipIndex {
 public:
  // InputError naming the archive for anything but a zip of stored entries under one top
  // folder (torch.save's "NAME/data.pkl", "NAME/data/0", ...).
  explicit ZipIndex(const ByteSource& archive);
  // Entries by their name within the top folder ("data.pkl", "data/0").
  bool has(const std::string& record) const { return entries_.count(record) > 0; }
  const ZipEntry* find(const std::string& record) const;
  size_t size() const { return entries_.size(); }

 private:
  std::map<std::string, ZipEntry> entries_;
};

}  // namespace txl
