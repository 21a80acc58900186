// UTF-8 decoding and encoding of Unicode code points (the char tokenizer's units).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace txl {

// Decodes strict UTF-8 (no overlongs, no surrogates, max U+10FFFF). Invalid input throws
// InputError: "<source>: invalid UTF-8 at byte offset N (<reason>)".
std::u32string decode_utf8(std::string_view bytes, const std::string& source);

// Decodes the code point that starts at bytes[*pos] and moves *pos past it. Errors as in
// decode_utf8, with offsets counted from the start of `bytes`. Lets tokenizers walk a text
// without building a u32string.
char32_t next_code_point(std::string_view bytes, size_t* pos, const std::string& source);

// Throws like decode_utf8 when `bytes` is not strict UTF-8; allocates nothing.
void check_utf8(std::string_view bytes, const std::string& source);

// Appends the UTF-8 bytes of one code point.
void append_utf8(std::string& out, char32_t code_point);
std::string encode_utf8(std::u32string_view code_points);

}  // namespace txl
