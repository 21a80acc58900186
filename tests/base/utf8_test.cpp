// Strict UTF-8: what the char tokenizer accepts, and the byte offset users see on bad input.
#include "txl/util/utf8.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "txl/util/error.h"

namespace txl {
namespace {

// The message the decoder raised, or "" when it accepted the input.
std::string decode_error(const std::string& bytes) {
  try {
    decode_utf8(bytes, "in.txt");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Utf8, DecodesAsciiChineseAndEmoji) {
  EXPECT_EQ(decode_utf8("Hi\n", "s"), U"Hi\n");
  EXPECT_EQ(decode_utf8("天地玄黄，宇宙洪荒。\n", "s"), U"天地玄黄，宇宙洪荒。\n");
  // U+1F600 is 4 bytes: F0 9F 98 80.
  EXPECT_EQ(decode_utf8("\xF0\x9F\x98\x80!", "s"), U"\U0001F600!");
  EXPECT_EQ(decode_utf8("", "s"), U"");
}

TEST(Utf8, EncodeIsTheInverseOfDecode) {
  for (const std::string text : {"plain ASCII\n", "天地玄黄，宇宙洪荒。\n",
                                 "mixed é ß ✓ \xF0\x9F\x98\x80 \xF0\x9F\x8C\x8D"}) {
    EXPECT_EQ(encode_utf8(decode_utf8(text, "s")), text);
  }
}

TEST(Utf8, AcceptsEveryBoundaryScalarValue) {
  // The first and last code point of each sequence length, and both sides of the surrogates.
  const std::u32string edges = {0x0,    0x7F,   0x80,    0x7FF,   0x800,   0xD7FF,
                                0xE000, 0xFFFF, 0x10000, 0xFFFFF, 0x10FFFF};
  const std::string bytes = encode_utf8(edges);
  EXPECT_EQ(bytes.size(), 1 + 1 + 2 + 2 + 3 + 3 + 3 + 3 + 4 + 4 + 4u);
  EXPECT_EQ(decode_utf8(bytes, "s"), edges);
}

TEST(Utf8, MessageNamesSourceOffsetAndReason) {
  const std::string bytes = std::string(17, 'a') + "\x80" + "b";
  EXPECT_EQ(decode_error(bytes),
            "in.txt: invalid UTF-8 at byte offset 17 (unexpected continuation byte)");
}

struct BadCase {
  const char* name;
  std::string bytes;
  size_t offset;
  const char* reason;
};

TEST(Utf8, RejectsEachKindOfInvalidInputAtItsOffset) {
  const BadCase cases[] = {
      {"stray continuation", "ab\x80", 2, "unexpected continuation byte"},
      {"overlong C0", "abc\xC0\xAF", 3, "overlong encoding"},
      {"overlong C1", "\xC1\xBF", 0, "overlong encoding"},
      {"overlong 3-byte '/'", "x\xE0\x80\xAF", 1, "overlong encoding"},
      {"overlong 4-byte", "xy\xF0\x8F\xBF\xBF", 2, "overlong encoding"},
      {"surrogate D800", "12\xED\xA0\x80", 2, "surrogate code point"},
      {"surrogate DFFF", "\xED\xBF\xBF", 0, "surrogate code point"},
      {"above U+10FFFF", "\xF4\x90\x80\x80", 0, "above U+10FFFF"},
      {"lead F5", "ok\xF5\x80\x80\x80", 2, "invalid byte 0xF5"},
      {"byte FF", "\xFF", 0, "invalid byte 0xFF"},
      {"truncated at end", "天\xE5\xA4", 3, "truncated sequence"},
      {"truncated 4-byte", "\xF0\x9F\x98", 0, "truncated sequence"},
      {"lead then ASCII",
       "\xE5"
       "A",
       0, "missing continuation byte"},
      {"lead then lead", "ab\xC3\xC3\xA9", 2, "missing continuation byte"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string message = decode_error(c.bytes);
    EXPECT_NE(
        message.find("in.txt: invalid UTF-8 at byte offset " + std::to_string(c.offset) + " ("),
        std::string::npos)
        << message;
    EXPECT_NE(message.find(c.reason), std::string::npos) << message;
    // check_utf8 is the allocation-free twin and must agree.
    try {
      check_utf8(c.bytes, "in.txt");
      ADD_FAILURE() << "check_utf8 accepted it";
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()), message);
    }
  }
}

TEST(Utf8, NextCodePointAdvancesBySequenceLength) {
  const std::string bytes = "a\xC3\xA9\xE5\xA4\xA9\xF0\x9F\x98\x80";  // a é 天 😀
  size_t pos = 0;
  EXPECT_EQ(next_code_point(bytes, &pos, "s"), U'a');
  EXPECT_EQ(pos, 1u);
  EXPECT_EQ(next_code_point(bytes, &pos, "s"), U'\u00E9');
  EXPECT_EQ(pos, 3u);
  EXPECT_EQ(next_code_point(bytes, &pos, "s"), U'\u5929');
  EXPECT_EQ(pos, 6u);
  EXPECT_EQ(next_code_point(bytes, &pos, "s"), U'\U0001F600');
  EXPECT_EQ(pos, 10u);
}

TEST(Utf8, AppendRejectsNonScalarValues) {
  std::string out;
  EXPECT_THROW(append_utf8(out, 0xD800), std::invalid_argument);
  EXPECT_THROW(append_utf8(out, 0x110000), std::invalid_argument);
  EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace txl
