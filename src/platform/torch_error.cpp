#include "txl/platform/torch_error.h"

#include <c10/util/Exception.h>

#include <cstdlib>
#include <cstring>

namespace txl {

std::string error_text(const std::exception& e) {
  const char* backtrace = std::getenv("TXL_BACKTRACE");
  const bool frames = backtrace != nullptr && std::strcmp(backtrace, "1") == 0;
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e); c10_error && !frames)
    return c10_error->what_without_backtrace();
  return e.what();
}

}  // namespace txl
