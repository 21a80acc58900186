#include "txl/platform/torch_error.h"

#include <c10/util/Exception.h>

#include "txl/util/env.h"

namespace txl {

std::string error_text(const std::exception& e) {
  const bool frames = env_is("TXL_BACKTRACE", "1");
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e); c10_error && !frames)
    return c10_error->what_without_backtrace();
  return e.what();
}

}  // namespace txl
