// An exception's text as one line for the user. LibTorch's c10::Error carries a backtrace of
// a dozen frames in what(), which buries the one line that says what happened; txl prints
// what_without_backtrace() unless TXL_BACKTRACE=1 asks for the frames (for a bug report).
#pragma once

#include <exception>
#include <string>

namespace txl {

std::string error_text(const std::exception& e);

}  // namespace txl
