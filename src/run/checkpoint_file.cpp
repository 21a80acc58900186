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
constexpr uint64_t kVersionEnd = 12;  // magic and version: enough to know the header's size

// The header's size in a file of this version: 48 bytes in version 2 (one payload), 64 since.
uint64_t header_size(uint32_t version) { return version == 2 ? 48 : 64; }

struct Block {
  uint64_t size = 0;
  uint64_t hash = 0;
};

struct Header {
  uint32_t version = 0;
  Block meta, weights, training;  // version 2: `weights` is the one payload, `training` empty
  uint64_t meta_at() const { return header_size(version); }
  uint64_t weights_at() const { return meta_at() + meta.size; }
  uint64_t training_at() const { return weights_at() + weights.size; }
};

std::string encode_header(const Header& h) {
  std::string out(kMagic, sizeof kMagic);
  put_u32_le(out, h.version);
  put_u32_le(out, 0);
  for (const Block* b : {&h.meta, &h.weights, &h.training}) {
    put_u64_le(out, b->size);
    put_u64_le(out, b->hash);
  }
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

std::string shorter_than_header(uint64_t file_size, const std::string& path, uint64_t header = 0) {
  return path + ": truncated: " + std::to_string(file_size) + " bytes, shorter than the " +
         (header ? std::to_string(header) + "-byte " : "") + "checkpoint header";
}

// Magic, then the version, then whether the header is whole.
uint32_t decode_version(const std::string& head, uint64_t file_size, const std::string& path) {
  if (file_size == 0) throw InputError(path + ": empty file, not a txl checkpoint");
  if (head.size() < sizeof kMagic && std::memcmp(head.data(), kMagic, head.size()) == 0) {
    throw InputError(shorter_than_header(file_size, path));
  }
  if (head.size() < sizeof kMagic || std::memcmp(head.data(), kMagic, sizeof kMagic) != 0) {
    throw InputError(path + ": not a txl checkpoint (" + foreign_kind(head) + ")");
  }
  if (file_size < kVersionEnd) throw InputError(shorter_than_header(file_size, path));
  const uint32_t version = read_u32_le(reinterpret_cast<const unsigned char*>(head.data()) + 8);
  if (version < static_cast<uint32_t>(kOldestCheckpointVersion) ||
      version > static_cast<uint32_t>(kCheckpointVersion)) {
    throw InputError(path + ": checkpoint format version " + std::to_string(version) +
                     ", this txl reads versions " + std::to_string(kOldestCheckpointVersion) +
                     " to " + std::to_string(kCheckpointVersion));
  }
  if (file_size < header_size(version)) {
    throw InputError(shorter_than_header(file_size, path, header_size(version)));
  }
  return version;
}

// Checks magic, version and that the lengths account for exactly `file_size` bytes.
Header decode_header(const std::string& head, uint64_t file_size, const std::string& path) {
  Header h;
  h.version = decode_version(head, file_size, path);
  const auto* p = reinterpret_cast<const unsigned char*>(head.data());
  if (read_u32_le(p + 12) != 0) {
    throw InputError(path + ": corrupted: the reserved header field is not zero");
  }
  std::vector<Block*> blocks = {&h.meta, &h.weights};
  if (h.version >= 3) blocks.push_back(&h.training);
  std::string announced;
  for (size_t i = 0; i < blocks.size(); ++i) {
    blocks[i]->size = read_u64_le(p + 16 + 16 * i);
    blocks[i]->hash = read_u64_le(p + 24 + 16 * i);
    announced += (i ? " + " : "") + std::to_string(blocks[i]->size);
  }
  uint64_t left = file_size - h.meta_at();
  for (const Block* b : blocks) {
    // Compared one at a time so corrupted huge lengths cannot overflow a sum.
    if (b->size > left) {
      throw InputError(path + ": truncated or corrupted: the header announces " + announced +
                       " bytes after it, the file holds " +
                       std::to_string(file_size - h.meta_at()));
    }
    left -= b->size;
  }
  if (left != 0) {
    throw InputError(path + ": corrupted: " + std::to_string(left) +
                     " unexpected bytes after the checkpoint data");
  }
  return h;
}

std::string damaged(const std::string& path, const std::string& what) {
  return path + ": corrupted: the checksum of " + what +
         " does not match (the file was damaged after it was written)";
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

// The XXH64 of `block` at `offset`, read in pieces of at most 8 MiB.
void verify_block(std::ifstream& in, uint64_t offset, const Block& block, const std::string& what,
                  const std::string& path) {
  Xxh64 hash;
  std::vector<char> piece(std::min<uint64_t>(block.size, uint64_t{8} << 20));
  in.clear();
  in.seekg(static_cast<std::streamoff>(offset));
  for (uint64_t done = 0; done < block.size;) {
    const uint64_t n = std::min<uint64_t>(piece.size(), block.size - done);
    in.read(piece.data(), static_cast<std::streamsize>(n));
    if (static_cast<uint64_t>(in.gcount()) != n) {
      throw InputError(path +
                       ": cannot read checkpoint (short read; the file changed while reading?)");
    }
    hash.add(piece.data(), n);
    done += n;
  }
  if (hash.value() != block.hash) throw InputError(damaged(path, what));
}

PayloadSection section(std::ifstream& in, uint64_t offset, const Block& block) {
  const uint64_t size = block.size;
  auto read = [&in, offset, size](uint64_t pos, void* buf, size_t n) -> size_t {
    if (pos >= size) return 0;
    n = static_cast<size_t>(std::min<uint64_t>(n, size - pos));
    in.clear();
    in.seekg(static_cast<std::streamoff>(offset + pos));
    in.read(static_cast<char*>(buf), static_cast<std::streamsize>(n));
    return static_cast<size_t>(in.gcount());
  };
  return {read, size};
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

// The open file's header and verified meta block.
Header read_head(std::ifstream& in, uint64_t size, const std::string& path, std::string* meta) {
  const std::string head = read_range(in, 0, std::min<uint64_t>(size, 64), path);
  const Header h = decode_header(head, size, path);
  *meta = read_range(in, h.meta_at(), h.meta.size, path);
  if (xxh64(meta->data(), meta->size()) != h.meta.hash) {
    throw InputError(damaged(path, "the metadata"));
  }
  return h;
}

}  // namespace

void write_checkpoint_file(const std::string& path, const std::string& meta,
                           const SectionWriter& write_weights,
                           const SectionWriter& write_training) {
  write_file_atomic(path, [&](FileSink& file) {
    Header h;
    h.version = static_cast<uint32_t>(kCheckpointVersion);
    h.meta = {meta.size(), xxh64(meta.data(), meta.size())};
    const std::string placeholder(header_size(h.version), '\0');  // lengths and checksums last
    file.write(placeholder.data(), placeholder.size());
    file.write(meta.data(), meta.size());
    const auto write_section = [&](const SectionWriter& write, Block& block) {
      Xxh64 hash;
      if (write) {
        write([&](const void* data, size_t size) {
          hash.add(data, size);
          file.write(data, size);
          block.size += size;
        });
      }
      block.hash = hash.value();
    };
    write_section(write_weights, h.weights);
    write_section(write_training, h.training);
    const std::string header = encode_header(h);
    file.write_at(0, header.data(), header.size());
  });
}

std::string read_checkpoint_meta(const std::string& path) {
  uint64_t size = 0;
  auto in = open_file(path, &size);
  std::string meta;
  read_head(in, size, path, &meta);
  return meta;
}

std::string read_checkpoint_file(const std::string& path, PayloadSections which,
                                 const PayloadReader& read_payload) {
  uint64_t size = 0;
  auto in = open_file(path, &size);
  std::string meta;
  const Header h = read_head(in, size, path, &meta);
  CheckpointPayload payload;
  payload.version = static_cast<int>(h.version);
  // Version 2: one payload, weights and training state together.
  const char* weights = h.version == 2 ? "the tensor data" : "the weights section";
  verify_block(in, h.weights_at(), h.weights, weights, path);
  payload.weights = section(in, h.weights_at(), h.weights);
  if (which == PayloadSections::kAll && h.version >= 3) {
    verify_block(in, h.training_at(), h.training,
                 "the training section (optimizer state and memory; the weights are intact: "
                 "txl eval reads them, txl train --init-from fine-tunes from them)",
                 path);
    payload.training = section(in, h.training_at(), h.training);
  }
  if (read_payload) read_payload(meta, payload);
  return meta;
}

}  // namespace txl
