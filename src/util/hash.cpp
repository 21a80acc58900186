#include "txl/util/hash.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace txl {

namespace {

// XXH64's primes (specification, section "Definitions").
constexpr uint64_t kP1 = 11400714785074694791ULL;
constexpr uint64_t kP2 = 14029467366897019727ULL;
constexpr uint64_t kP3 = 1609587929392839161ULL;
constexpr uint64_t kP4 = 9650029242287828579ULL;
constexpr uint64_t kP5 = 2870177450012600261ULL;
constexpr uint64_t kFnvPrime = 1099511628211ull;

uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

uint64_t xxh_round(uint64_t acc, uint64_t input) {
  acc += input * kP2;
  acc = rotl(acc, 31);
  return acc * kP1;
}

uint64_t xxh_merge(uint64_t acc, uint64_t value) {
  acc ^= xxh_round(0, value);
  return acc * kP1 + kP4;
}

}  // namespace

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

uint64_t read_u64_le(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

uint32_t read_u32_le(const unsigned char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

void put_u64_le(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

void put_u32_le(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

Xxh64::Xxh64(uint64_t seed) : v_{seed + kP1 + kP2, seed + kP2, seed, seed - kP1}, seed_(seed) {}

void Xxh64::stripe(const unsigned char* p) {
  for (int i = 0; i < 4; ++i) v_[i] = xxh_round(v_[i], read_u64_le(p + 8 * i));
}

void Xxh64::add(const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  const unsigned char* const end = p + size;
  total_ += size;
  if (buffered_ > 0) {  // finish the stripe a previous piece began
    const size_t take = std::min<size_t>(32 - buffered_, size);
    std::memcpy(buffer_ + buffered_, p, take);
    buffered_ += take;
    p += take;
    if (buffered_ < 32) return;
    stripe(buffer_);
    buffered_ = 0;
  }
  for (; end - p >= 32; p += 32) stripe(p);
  buffered_ = static_cast<size_t>(end - p);
  if (buffered_ > 0) std::memcpy(buffer_, p, buffered_);
}

uint64_t Xxh64::value() const {
  uint64_t h;
  if (total_ >= 32) {
    h = rotl(v_[0], 1) + rotl(v_[1], 7) + rotl(v_[2], 12) + rotl(v_[3], 18);
    for (const uint64_t v : v_) h = xxh_merge(h, v);
  } else {
    h = seed_ + kP5;
  }
  h += total_;
  const unsigned char* p = buffer_;
  const unsigned char* const end = buffer_ + buffered_;
  while (p + 8 <= end) {
    h ^= xxh_round(0, read_u64_le(p));
    h = rotl(h, 27) * kP1 + kP4;
    p += 8;
  }
  if (p + 4 <= end) {
    h ^= static_cast<uint64_t>(read_u32_le(p)) * kP1;
    h = rotl(h, 23) * kP2 + kP3;
    p += 4;
  }
  while (p < end) {
    h ^= static_cast<uint64_t>(*p) * kP5;
    h = rotl(h, 11) * kP1;
    ++p;
  }
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  h *= kP3;
  h ^= h >> 32;
  return h;
}

uint64_t xxh64(const void* data, size_t size, uint64_t seed) {
  Xxh64 h(seed);
  h.add(data, size);
  return h.value();
}

void Fnv1a64::add_byte(unsigned char b) {
  h_ ^= b;
  h_ *= kFnvPrime;
}

void Fnv1a64::add(const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) add_byte(p[i]);
}

}  // namespace txl
