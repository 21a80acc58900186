// The project's hash functions, in one place. Both are frozen into files txl writes, so
// neither can change without a format version:
//  - XXH64: checkpoint integrity (header checksums) and the training split's fingerprint in
//    checkpoint meta; several GB/s, so checking a checkpoint costs little next to reading it.
//  - FNV-1a 64: the vocabulary checksum stored in checkpoints (version 2) and compared with
//    vocab.json on load, and the evaluation cache's keys; byte at a time, so it streams.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace txl {

// XXH64 of a byte range (Yann Collet's specification:
// https://github.com/Cyan4973/xxHash/blob/dev/doc/xxhash_spec.md).
uint64_t xxh64(const void* data, size_t size, uint64_t seed = 0);

// The same, fed piece by piece (a checkpoint's tensors as they are written): any split of
// the bytes into pieces gives xxh64 of them all.
class Xxh64 {
 public:
  explicit Xxh64(uint64_t seed = 0);
  void add(const void* data, size_t size);
  uint64_t value() const;

 private:
  void stripe(const unsigned char* p);  // one 32-byte stripe into the four lanes
  uint64_t v_[4];
  uint64_t seed_;
  uint64_t total_ = 0;
  unsigned char buffer_[32] = {};
  size_t buffered_ = 0;  // bytes of an unfinished stripe in buffer_
};

// FNV-1a 64 (http://www.isthe.com/chongo/tech/comp/fnv/), fed piece by piece.
class Fnv1a64 {
 public:
  void add(const void* data, size_t size);
  void add(const std::string& bytes) { add(bytes.data(), bytes.size()); }
  void add_byte(unsigned char b);
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = 14695981039346656037ull;  // offset basis
};

// 16 lowercase hex digits, zero-padded: how hashes appear in file names and JSON.
std::string hex64(uint64_t v);

// Little-endian codecs of fixed-width integers (file headers).
uint64_t read_u64_le(const unsigned char* p);
uint32_t read_u32_le(const unsigned char* p);
void put_u64_le(std::string& out, uint64_t v);
void put_u32_le(std::string& out, uint32_t v);

}  // namespace txl
