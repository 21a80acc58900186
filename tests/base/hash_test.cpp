// The project's two hashes against published values (both are frozen into txl's files).
#include "txl/util/hash.h"

#include <gtest/gtest.h>

#include <string>

namespace txl {
namespace {

TEST(Hash, Fnv1a64MatchesThePublishedTestVectors) {
  // From the FNV reference's test suite: "" and "a" and "foobar".
  EXPECT_EQ(Fnv1a64{}.value(), 0xcbf29ce484222325ull);
  Fnv1a64 a;
  a.add(std::string("a"));
  EXPECT_EQ(a.value(), 0xaf63dc4c8601ec8cull);
  Fnv1a64 pieces;  // fed in pieces equals fed at once
  pieces.add(std::string("foo"));
  pieces.add_byte('b');
  pieces.add(std::string("ar"));
  EXPECT_EQ(pieces.value(), 0x85944171f73967e8ull);
}

TEST(Hash, LittleEndianCodecsRoundTrip) {
  std::string bytes;
  put_u64_le(bytes, 0x0102030405060708ull);
  put_u32_le(bytes, 0xA0B0C0D0u);
  ASSERT_EQ(bytes.size(), 12u);
  EXPECT_EQ(static_cast<unsigned char>(bytes[0]), 0x08);
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  EXPECT_EQ(read_u64_le(p), 0x0102030405060708ull);
  EXPECT_EQ(read_u32_le(p + 8), 0xA0B0C0D0u);
}

}  // namespace
}  // namespace txl
