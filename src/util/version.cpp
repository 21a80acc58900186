#include "txl/util/version.h"

namespace txl {

std::string txl_version() { return TXL_VERSION; }

}  // namespace txl
