// What differs between the LibTorch versions txl builds against (Debian 12's 1.13, Debian
// 13's 2.6, a PyTorch 2.x wheel's), in one place. Code outside src/platform/ uses these
// instead of testing versions itself.
#pragma once

#include <torch/torch.h>
#include <torch/version.h>

#include <sstream>
#include <string>
#include <type_traits>

// True when the LibTorch being compiled against is at least major.minor.
#define TXL_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) ||      \
   (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace txl {

// Whether this LibTorch has scaled_dot_product_attention with a scale argument (2.1 and
// later; not 1.13).
inline constexpr bool kHasScaledDotProductAttention = TXL_TORCH_AT_LEAST(2, 1);

// softmax(q k^T * scale + mask) v by at::scaled_dot_product_attention: q [B, H, Q, D],
// k and v [B, H, K, D]; mask a bool [Q, K] (true: the key takes part), a float one added to
// the logits (any shape that broadcasts to [B, H, Q, K]), or undefined with causal = true (K = Q).
// -> [B, H, Q, D] Without kHasScaledDotProductAttention it throws: callers check that first.
torch::Tensor scaled_dot_product_attention(const torch::Tensor& q, const torch::Tensor& k,
                                           const torch::Tensor& v, const torch::Tensor& mask,
                                           bool causal, double scale);

// The key of parameter p in an optimizer's state map (Optimizer::state()): LibTorch 1.13
// names it by the address of its TensorImpl written as a string, 2.x by the address itself.
// Decided from the map's key type, so it follows whatever the headers declare.
template <typename Map>
typename Map::key_type optimizer_state_key(const Map&, const torch::Tensor& p) {
  if constexpr (std::is_same_v<typename Map::key_type, std::string>) {
    std::ostringstream name;  // what 1.13's c10::guts::to_string writes
    name << p.unsafeGetTensorImpl();
    return name.str();
  } else {
    return p.unsafeGetTensorImpl();
  }
}

}  // namespace txl
