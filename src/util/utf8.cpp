#include "txl/util/utf8.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "txl/util/error.h"

namespace txl {

namespace {

// Sequence errors report the offset of the sequence's first byte, as Python's decoder does:
// that is where the bad character starts in the user's file.
[[noreturn]] void fail(const std::string& source, size_t offset, const std::string& reason) {
  throw InputError(source + ": invalid UTF-8 at byte offset " + std::to_string(offset) + " (" +
                   reason + ")");
}

std::string hex_byte(unsigned char b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02X", b);
  return buf;
}

bool is_continuation(unsigned char b) { return (b & 0xC0) == 0x80; }

}  // namespace

char32_t next_code_point(std::string_view bytes, size_t* pos, const std::string& source) {
  const size_t start = *pos;
  const auto b0 = static_cast<unsigned char>(bytes[start]);
  if (b0 < 0x80) {
    *pos = start + 1;
    return b0;
  }
  if (is_continuation(b0)) fail(source, start, "unexpected continuation byte");
  if (b0 == 0xC0 || b0 == 0xC1) fail(source, start, "overlong encoding");
  if (b0 > 0xF4) fail(source, start, "invalid byte " + hex_byte(b0));

  // RFC 3629 table: the allowed range of the second byte depends on the lead byte; this
  // is what excludes overlongs, surrogates (ED A0..BF) and code points above U+10FFFF.
  size_t len;
  char32_t cp;
  unsigned char lo = 0x80, hi = 0xBF;
  const char* range_reason = "invalid sequence";
  if (b0 < 0xE0) {
    len = 2;
    cp = b0 & 0x1F;
  } else if (b0 < 0xF0) {
    len = 3;
    cp = b0 & 0x0F;
    if (b0 == 0xE0) {
      lo = 0xA0;
      range_reason = "overlong encoding";
    } else if (b0 == 0xED) {
      hi = 0x9F;
      range_reason = "surrogate code point";
    }
  } else {
    len = 4;
    cp = b0 & 0x07;
    if (b0 == 0xF0) {
      lo = 0x90;
      range_reason = "overlong encoding";
    } else if (b0 == 0xF4) {
      hi = 0x8F;
      range_reason = "code point above U+10FFFF";
    }
  }
  for (size_t k = 1; k < len; ++k) {
    if (start + k >= bytes.size()) {
      fail(source, start,
           "truncated sequence: input ends inside a " + std::to_string(len) + "-byte sequence");
    }
    const auto b = static_cast<unsigned char>(bytes[start + k]);
    if (!is_continuation(b)) {
      fail(source, start,
           "missing continuation byte: " + hex_byte(b0) + " followed by " + hex_byte(b));
    }
    if (k == 1 && (b < lo || b > hi)) fail(source, start, range_reason);
    cp = (cp << 6) | (b & 0x3F);
  }
  *pos = start + len;
  return cp;
}

std::u32string decode_utf8(std::string_view bytes, const std::string& source) {
  std::u32string out;
  out.reserve(bytes.size());
  size_t pos = 0;
  while (pos < bytes.size()) out.push_back(next_code_point(bytes, &pos, source));
  return out;
}

void check_utf8(std::string_view bytes, const std::string& source) {
  constexpr uint64_t kHighBits = 0x8080808080808080ULL;
  size_t pos = 0;
  while (pos < bytes.size()) {
    uint64_t eight;
    if (pos + 8 <= bytes.size() &&
        (std::memcpy(&eight, bytes.data() + pos, 8), (eight & kHighBits) == 0)) {
      pos += 8;  // eight ASCII bytes: most of most corpora
    } else if (static_cast<unsigned char>(bytes[pos]) < 0x80) {
      ++pos;
    } else {
      next_code_point(bytes, &pos, source);
    }
  }
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    throw std::invalid_argument("append_utf8: not a Unicode scalar value: " +
                                std::to_string(static_cast<uint32_t>(cp)));
  }
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string encode_utf8(std::u32string_view code_points) {
  std::string out;
  out.reserve(code_points.size());
  for (char32_t cp : code_points) append_utf8(out, cp);
  return out;
}

}  // namespace txl
