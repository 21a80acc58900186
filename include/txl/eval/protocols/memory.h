// The memory method's settings by name (src/eval/protocols/memory.cpp declares them): code
// that reads or sets one by name (that file, the tests) uses these, so that a misspelt name
// does not compile. Everything else asks the declaration (protocol.h).
#pragma once

namespace txl::memory_setting {

inline constexpr char kMemLen[] = "mem_len";          // --mem-len, a study's mem_lens
inline constexpr char kStreams[] = "streams";         // --streams
inline constexpr char kSameLength[] = "same_length";  // --same-length (a switch)

}  // namespace txl::memory_setting
