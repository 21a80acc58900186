#include "txl/run/checkpoint_file.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

#include "txl/util/error.h"
#include "txl/util/fs.h"
#include "txl/util/hash.h"

namespace txl {

namespace {

constexpr char kMagic[8] = {'T', 'X', 'L', 'C', 'K', 'P', 'T', '\n'};
constexpr size_t kHeaderSize = 48;

struct Header {
  uint32_t version = 0;
  uint64_t meta_size = 0;
  uint64_t meta_hash = 0;
  uint64_t payload_size = 0;
  uint64_t payload_hash = 0;
};

std::string encode_header(const Header& h) {
  std::string out(kMagic, sizeof kMagic);
  put_u32_le(out, h.version);
  put_u32_le(out, 0);
  put_u64_le(out, h.meta_size);
  put_u64_le(out, h.meta_hash);
  put_u64_le(out, h.payload_size);
  put_u64_le(out, h.payload_hash);
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
  h.version = read_u32_le(p + 8);
  h.meta_size = read_u64_le(p + 16);
  h.meta_hash = read_u64_le(p + 24);
  h.payload_size = read_u64_le(p + 32);
  h.payload_hash = read_u64_le(p + 40);
  if (h.version != static_cast<uint32_t>(kCheckpointVersion)) {
    throw InputError(path + ": checkpoint format version " + std::to_string(h.version) +
                     ", this txl reads version " + std::to_string(kCheckpointVersion));
  }
  if (read_u32_le(p + 12) != 0) {
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
  if (file_kind(path) == FileKind::kMissing) throw InputError(path + ": checkpoint file not found");
  check_not_special(path, "a checkpoint file");
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw InputError(path + ": cannot open checkpoint: " + std::strerror(errno));
  const std::streamoff end = in.tellg();
  if (end < 0) throw InputError(path + ": cannot read checkpoint (cannot measure it)");
  *size = static_cast<uint64_t>(end);
  return in;
}

}  // namespace

void write_checkpoint_file(const std::string& path, const std::string& meta,
                           const std::function<void(const PayloadSink&)>& write_payload) {
  write_file_atomic(path, [&](FileSink& file) {
    Header h;
    h.version = static_cast<uint32_t>(kCheckpointVersion);
    h.meta_size = meta.size();
    h.meta_hash = xxh64(meta.data(), meta.size());
    const std::string placeholder(kHeaderSize, '\0');  // lengths and checksums come last
    file.write(placeholder.data(), placeholder.size());
    file.write(meta.data(), meta.size());
    Xxh64 payload_hash;
    write_payload([&](const void* data, size_t size) {
      payload_hash.add(data, size);
      file.write(data, size);
      h.payload_size += size;
    });
    h.payload_hash = payload_hash.value();
    const std::string header = encode_header(h);
    file.write_at(0, header.data(), header.size());
  });
}

std::string read_checkpoint_file(const std::string& path, const PayloadReader& read_payload) {
  uint64_t size = 0;
  auto in = open_file(path, &size);
  const std::string head = read_range(in, 0, std::min<uint64_t>(size, kHeaderSize), path);
  const Header h = decode_header(head, size, path);
  std::string meta = read_range(in, kHeaderSize, h.meta_size, path);
  check_hash(meta.data(), meta.size(), h.meta_hash, "metadata", path);
  if (!read_payload) return meta;
  // The checksum over the payload read in pieces, then the payload from the same open file
  // (a checkpoint renamed over this one meanwhile is not read half and half).
  const uint64_t offset = kHeaderSize + h.meta_size;
  Xxh64 hash;
  std::vector<char> piece(std::min<uint64_t>(h.payload_size, uint64_t{8} << 20));
  in.seekg(static_cast<std::streamoff>(offset));
  for (uint64_t done = 0; done < h.payload_size;) {
    const uint64_t n = std::min<uint64_t>(piece.size(), h.payload_size - done);
    in.read(piece.data(), static_cast<std::streamsize>(n));
    if (static_cast<uint64_t>(in.gcount()) != n) {
      throw InputError(path +
                       ": cannot read checkpoint (short read; the file changed while reading?)");
    }
    hash.add(piece.data(), n);
    done += n;
  }
  if (hash.value() != h.payload_hash) {
    throw InputError(path +
                     ": corrupted: the checksum of the tensor data does not match (the file was "
                     "damaged after it was written)");
  }
  read_payload(
      meta,
      [&](uint64_t pos, void* buf, size_t n) -> size_t {
        if (pos >= h.payload_size) return 0;
        n = static_cast<size_t>(std::min<uint64_t>(n, h.payload_size - pos));
        in.clear();
        in.seekg(static_cast<std::streamoff>(offset + pos));
        in.read(static_cast<char*>(buf), static_cast<std::streamsize>(n));
        return static_cast<size_t>(in.gcount());
      },
      h.payload_size);
  return meta;
}

}  // namespace txl
