// The sliding method's setting by name (src/eval/protocols/sliding.cpp declares it): code
// that reads or sets it by name (that file, the tests) uses this, so that a misspelt name
// does not compile. Everything else asks the declaration (protocol.h).
#pragma once

namespace txl::sliding_setting {

inline constexpr char kStride[] = "stride";  // --stride, a study's stride

}  // namespace txl::sliding_setting
