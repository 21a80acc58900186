#include "txl/platform/tcp_store.h"

#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <type_traits>
#include <utility>

namespace txl {

namespace {

// Whether Options has a useLibUV member (LibTorch 2.2+).
template <typename Options, typename = void>
struct HasUseLibUv : std::false_type {};
template <typename Options>
struct HasUseLibUv<Options, std::void_t<decltype(std::declval<Options&>().useLibUV)>>
    : std::true_type {};

template <typename Options>
void ask_for_classic_backend(Options& options) {
  if constexpr (HasUseLibUv<Options>::value) options.useLibUV = false;
}

}  // namespace

c10::intrusive_ptr<c10d::Store> make_tcp_store(const TcpStoreSettings& settings) {
  c10d::TCPStoreOptions options;
  options.port = settings.port;
  options.isServer = settings.is_server;
  options.numWorkers = settings.workers;
  options.waitWorkers = true;
  options.timeout = settings.timeout;
  ask_for_classic_backend(options);
  return c10::make_intrusive<c10d::TCPStore>(settings.host, options);
}

}  // namespace txl
