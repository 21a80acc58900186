// A zip's central directory (PKWARE's APPNOTE.TXT, sections 4.3.7, 4.3.12-4.3.16 and the
// Zip64 extra field 4.5.3), read for stored entries only (zip_index.h).
#include "txl/run/zip_index.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>

#include "txl/util/error.h"

namespace txl {

namespace {

constexpr uint32_t kEndSignature = 0x06054b50;      // end of central directory
constexpr uint32_t kEnd64Signature = 0x06064b50;    // Zip64 end of central directory
constexpr uint32_t kEnd64Locator = 0x07064b50;      // Zip64 end of central directory locator
constexpr uint32_t kCentralSignature = 0x02014b50;  // central directory file header
constexpr uint32_t kLocalSignature = 0x04034b50;    // local file header
constexpr uint64_t kEndBytes = 22, kLocatorBytes = 20, kEnd64Bytes = 56;
constexpr uint64_t kCentralBytes = 46, kLocalBytes = 30;
// A state dict of 10^5 tensors is 10^5 storages; past this an archive is not a state dict.
constexpr uint64_t kMaxEntries = uint64_t{1} << 20;

uint64_t le(const std::string& b, size_t at, int n) {
  uint64_t v = 0;
  for (int k = 0; k < n; ++k) v |= uint64_t(uint8_t(b[at + size_t(k)])) << (8 * k);
  return v;
}

[[noreturn]] void bad(const ByteSource& a, const std::string& what) {
  throw InputError(fmt::format("{}: not a torch.save archive ({})", a.name(), what));
}

struct Directory {
  uint64_t entries = 0, at = 0, bytes = 0;
};

// The end record is the last 22 bytes plus a comment of at most 65535.
Directory find_directory(const ByteSource& a) {
  if (a.size() < kEndBytes) bad(a, fmt::format("{} bytes, too short for a zip", a.size()));
  const uint64_t tail_bytes = std::min<uint64_t>(a.size(), kEndBytes + 65535);
  const std::string tail = a.read_string(a.size() - tail_bytes, tail_bytes);
  size_t end = std::string::npos;
  for (size_t k = tail.size() - kEndBytes + 1; k-- > 0;) {
    if (le(tail, k, 4) == kEndSignature && k + kEndBytes + le(tail, k + 20, 2) == tail.size()) {
      end = k;
      break;
    }
  }
  if (end == std::string::npos) bad(a, "no end of central directory");
  const uint64_t end_at = a.size() - tail_bytes + end;
  Directory d{le(tail, end + 10, 2), le(tail, end + 16, 4), le(tail, end + 12, 4)};
  if (le(tail, end + 4, 2) != 0 || le(tail, end + 6, 2) != 0) bad(a, "a zip on several disks");
  const bool zip64 = d.entries == 0xFFFF || d.at == 0xFFFFFFFF || d.bytes == 0xFFFFFFFF;
  if (zip64) {
    if (end_at < kLocatorBytes) bad(a, "a Zip64 archive without its locator");
    const std::string loc = a.read_string(end_at - kLocatorBytes, kLocatorBytes);
    if (le(loc, 0, 4) != kEnd64Locator) bad(a, "a Zip64 archive without its locator");
    const uint64_t at = le(loc, 8, 8);
    if (at > a.size() || a.size() - at < kEnd64Bytes)
      bad(a, "the Zip64 end record is past the end");
    const std::string rec = a.read_string(at, kEnd64Bytes);
    if (le(rec, 0, 4) != kEnd64Signature) bad(a, "no Zip64 end of central directory");
    d = {le(rec, 32, 8), le(rec, 48, 8), le(rec, 40, 8)};
  }
  if (d.entries > kMaxEntries)
    bad(a,
        fmt::format("{} entries, past the {} a state dict's archive has", d.entries, kMaxEntries));
  if (d.at > a.size() || d.bytes > a.size() - d.at || d.at + d.bytes > end_at)
    bad(a, "the central directory runs past the end");
  return d;
}

// The Zip64 extra field's 8-byte values stand in for the 32-bit fields set to 0xFFFFFFFF.
void read_zip64_extra(const std::string& extra, uint64_t& raw, uint64_t& packed, uint64_t& at) {
  for (size_t k = 0; k + 4 <= extra.size();) {
    const uint64_t id = le(extra, k, 2), n = le(extra, k + 2, 2);
    if (k + 4 + n > extra.size()) return;
    if (id == 0x0001) {
      size_t p = k + 4;
      for (uint64_t* v : {&raw, &packed, &at}) {
        if (*v != 0xFFFFFFFF) continue;
        if (p + 8 > k + 4 + n) return;
        *v = le(extra, p, 8);
        p += 8;
      }
      return;
    }
    k += 4 + size_t(n);
  }
}

}  // namespace

ZipIndex::ZipIndex(const ByteSource& a) {
  const Directory d = find_directory(a);
  const std::string dir = a.read_string(d.at, d.bytes);
  std::string top;
  size_t p = 0;
  for (uint64_t i = 0; i < d.entries; ++i) {
    if (p + kCentralBytes > dir.size() || le(dir, p, 4) != kCentralSignature)
      bad(a, fmt::format("central directory entry {} is damaged", i));
    const uint64_t method = le(dir, p + 10, 2);
    uint64_t packed = le(dir, p + 20, 4), raw = le(dir, p + 24, 4), local = le(dir, p + 42, 4);
    const size_t name_len = le(dir, p + 28, 2), extra_len = le(dir, p + 30, 2),
                 comment_len = le(dir, p + 32, 2);
    if (p + kCentralBytes + name_len + extra_len + comment_len > dir.size())
      bad(a, fmt::format("central directory entry {} runs past the directory", i));
    const std::string name = dir.substr(p + kCentralBytes, name_len);
    read_zip64_extra(dir.substr(p + kCentralBytes + name_len, extra_len), raw, packed, local);
    p += kCentralBytes + name_len + extra_len + comment_len;

    const size_t slash = name.find('/');
    if (slash == std::string::npos || slash == 0) bad(a, "entry " + name + " is not in a folder");
    if (top.empty()) top = name.substr(0, slash + 1);
    if (name.compare(0, top.size(), top) != 0)
      bad(a, "entry " + name + " is outside the archive's folder " + top);
    if (method != 0 || packed != raw)
      throw InputError(fmt::format(
          "{}: entry {} is compressed (method {}, {} bytes holding {}); torch.save stores its "
          "records uncompressed, and txl does not inflate what it cannot bound",
          a.name(), name, method, packed, raw));
    if (local > a.size() || a.size() - local < kLocalBytes)
      bad(a, "entry " + name + " starts past the end");
    const std::string head = a.read_string(local, kLocalBytes);
    if (le(head, 0, 4) != kLocalSignature) bad(a, "entry " + name + " has no local header");
    const uint64_t data_at = local + kLocalBytes + le(head, 26, 2) + le(head, 28, 2);
    if (data_at > a.size() || raw > a.size() - data_at)
      bad(a, fmt::format("entry {}'s {} bytes run past the end of the file", name, raw));
    const auto [it, fresh] = entries_.emplace(name.substr(top.size()), ZipEntry{data_at, raw});
    if (!fresh)
      throw InputError(fmt::format("{}: entry {} is in the archive twice", a.name(), name));
  }
}

const ZipEntry* ZipIndex::find(const std::string& record) const {
  const auto it = entries_.find(record);
  return it == entries_.end() ? nullptr : &it->second;
}

}  // namespace txl
