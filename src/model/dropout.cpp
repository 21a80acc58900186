#include "txl/model/dropout.h"

#include <ATen/record_function.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "txl/platform/parallel.h"

namespace txl {

namespace {

inline uint32_t mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

// What one pass needs: the stream's keys, the threshold and the scale.
struct DropoutPlan {
  uint32_t k0 = 0, k1_base = 0;  // k1 = k1_base + mix32(hi32(index)): block_k1
  uint32_t drop_below = 0;       // dropped where the hash is below: p * 2^32
  float scale = 1.0f;            // 1 / (1 - p)
};

DropoutPlan plan_dropout(double p, uint64_t seed) {
  DropoutPlan plan;
  plan.k0 = static_cast<uint32_t>(seed);
  plan.k1_base = static_cast<uint32_t>(seed >> 32);
  plan.drop_below = static_cast<uint32_t>(std::min(p * 4294967296.0, 4294967295.0));
  plan.scale = static_cast<float>(1.0 / (1.0 - p));
  return plan;
}

// The second round's key for the indices whose high 32 bits are `hi` (mix32(0) = 0: indices
// below 2^32 use the seed's high half as it is).
uint32_t block_k1(const DropoutPlan& plan, uint32_t hi) { return plan.k1_base + mix32(hi); }

// The hash of the index whose low 32 bits are `lo`, with its block's keys (dropout.h).
inline uint32_t keep_hash(uint32_t lo, uint32_t k0, uint32_t k1) {
  return mix32(mix32(lo ^ k0) + k1);
}

// v where keep is 1, +0 where it is 0: a mask on the bits, so that an infinite or NaN input
// is dropped to 0 (as ReLU then dropout would), where multiplying by 0 gives NaN, and the
// loop has no branch (GCC keeps a float select's possibly trapping product on its branch).
inline float keep_or_zero(float v, uint32_t keep) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  bits &= 0u - keep;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

// out[i] = in[i] * scale where element first + i is kept (and, with a gate, gate[i] > 0),
// else 0; i in [0, n), all indices of one 2^32 block (hi32 constant). A plain loop the
// compiler vectorises; target_clones adds AVX2 and AVX-512 versions picked at load time by
// what the CPU has, so nothing assumes the machine it was built on.
template <typename T>
inline void keep_scaled(const T* in, const T* gate, T* out, int64_t n, uint32_t first, uint32_t k0,
                        uint32_t k1, uint32_t drop_below, float scale) {
  // Two loops without branches inside, so that both vectorise.
  if (gate == nullptr) {
    for (int64_t i = 0; i < n; ++i) {
      const uint32_t h = keep_hash(first + static_cast<uint32_t>(i), k0, k1);
      out[i] = static_cast<T>(
          keep_or_zero(static_cast<float>(in[i]) * scale, static_cast<uint32_t>(h >= drop_below)));
    }
  } else {
    for (int64_t i = 0; i < n; ++i) {
      const uint32_t h = keep_hash(first + static_cast<uint32_t>(i), k0, k1);
      const bool keep = (h >= drop_below) & (static_cast<float>(gate[i]) > 0.0f);
      out[i] = static_cast<T>(
          keep_or_zero(static_cast<float>(in[i]) * scale, static_cast<uint32_t>(keep)));
    }
  }
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void keep_scaled_f32(
    const float* in, const float* gate, float* out, int64_t n, uint32_t first, uint32_t k0,
    uint32_t k1, uint32_t drop_below, float scale) {
  keep_scaled(in, gate, out, n, first, k0, k1, drop_below, scale);
}

// bfloat16 as its bits, converted with shifts the compiler vectorises (c10::BFloat16's own
// conversions, with their NaN branch, kept the loop scalar and made the bf16 pass slower than
// the mask multiply it replaced). Rounding to nearest even, as c10's; a NaN stays a NaN.
struct Bf16Bits {
  uint16_t bits;
  explicit operator float() const {
    const uint32_t u = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
  }
  explicit Bf16Bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    const uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
    const uint32_t nan = (u >> 16) | 0x40u;
    bits = static_cast<uint16_t>((u & 0x7FFFFFFFu) > 0x7F800000u ? nan : rounded);
  }
};
static_assert(sizeof(Bf16Bits) == sizeof(at::BFloat16), "bfloat16 is 16 bits");

__attribute__((target_clones("avx512f", "avx2", "default"))) void keep_scaled_bf16(
    const Bf16Bits* in, const Bf16Bits* gate, Bf16Bits* out, int64_t n, uint32_t first, uint32_t k0,
    uint32_t k1, uint32_t drop_below, float scale) {
  keep_scaled(in, gate, out, n, first, k0, k1, drop_below, scale);
}

// The pass over `in` (contiguous) into a new tensor, gated by `gate` (contiguous, same shape)
// when defined, split over the threads.
torch::Tensor run_pass(const torch::Tensor& in, const torch::Tensor& gate,
                       const DropoutPlan& plan) {
  auto out = torch::empty(in.sizes(), in.options().requires_grad(false));
  const bool fp32 = in.scalar_type() == torch::kFloat32;
  parallel_chunks(in.numel(), 1 << 15, [&](int64_t begin, int64_t end) {
    // Pieces within one 2^32 block of indices, whose high half enters the key.
    for (int64_t first = begin; first < end;) {
      const uint64_t hi = static_cast<uint64_t>(first) >> 32;
      const int64_t block_end = std::min<int64_t>(end, static_cast<int64_t>((hi + 1) << 32));
      const uint32_t k1 = block_k1(plan, static_cast<uint32_t>(hi));
      const auto lo = static_cast<uint32_t>(first);
      const int64_t n = block_end - first;
      if (fp32) {
        keep_scaled_f32(
            in.data_ptr<float>() + first, gate.defined() ? gate.data_ptr<float>() + first : nullptr,
            out.data_ptr<float>() + first, n, lo, plan.k0, k1, plan.drop_below, plan.scale);
      } else {
        const auto bits = [first](const torch::Tensor& t) {
          return reinterpret_cast<Bf16Bits*>(t.data_ptr<at::BFloat16>()) + first;
        };
        keep_scaled_bf16(bits(in), gate.defined() ? bits(gate) : nullptr, bits(out), n, lo, plan.k0,
                         k1, plan.drop_below, plan.scale);
      }
      first = block_end;
    }
  });
  return out;
}

// Forward and backward are the same pass with the same seed: over x (gated by x itself for
// ReLU), then over the incoming gradient (gated by the output, > 0 exactly where kept).
class HashedDropout : public torch::autograd::Function<HashedDropout> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               double p, bool relu, int64_t seed) {
    auto out = hashed_dropout(x, p, relu, static_cast<uint64_t>(seed));
    ctx->saved_data["p"] = p;
    ctx->saved_data["seed"] = seed;
    if (relu) ctx->save_for_backward({out});
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto gate = saved.empty() ? torch::Tensor() : saved[0].detach();
    const auto plan = plan_dropout(ctx->saved_data["p"].toDouble(),
                                   static_cast<uint64_t>(ctx->saved_data["seed"].toInt()));
    const auto g = grads[0].detach().contiguous();
    return {run_pass(g, gate, plan), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

bool has_kernel(const torch::Tensor& x) {
  return x.is_cpu() && (x.scalar_type() == torch::kFloat32 || x.scalar_type() == torch::kBFloat16);
}

// One draw from LibTorch's default generator seeds each call's stream.
int64_t draw_seed() {
  return torch::randint(std::numeric_limits<int64_t>::max(), {1}, torch::kLong).item<int64_t>();
}

}  // namespace

uint32_t dropout_hash(uint64_t seed, uint64_t index) {
  const auto plan = plan_dropout(0.5, seed);  // p does not enter the hash
  return keep_hash(static_cast<uint32_t>(index), plan.k0,
                   block_k1(plan, static_cast<uint32_t>(index >> 32)));
}

torch::Tensor hashed_dropout(const torch::Tensor& x, double p, bool relu, uint64_t seed) {
  TORCH_CHECK(has_kernel(x), "hashed_dropout takes float32 or bfloat16 CPU tensors, got ",
              x.scalar_type(), " on ", x.device());
  const auto in = x.detach().contiguous();
  return run_pass(in, relu ? in : torch::Tensor(), plan_dropout(p, seed));
}

torch::Tensor apply_dropout(const torch::Tensor& x, double p, bool training) {
  if (!training || p <= 0.0 || x.numel() == 0) return x;
  TORCH_CHECK(p < 1.0, "dropout probability must be below 1, got ", p);
  if (!has_kernel(x)) return torch::dropout(x, p, training);
  RECORD_FUNCTION("txl::dropout", std::vector<c10::IValue>());  // named in operator profiles
  return HashedDropout::apply(x, p, false, draw_seed());
}

torch::Tensor relu_dropout(const torch::Tensor& x, double p, bool training) {
  if (!training || p <= 0.0 || x.numel() == 0) return torch::relu(x);
  TORCH_CHECK(p < 1.0, "dropout probability must be below 1, got ", p);
  if (!has_kernel(x)) return torch::dropout(torch::relu(x), p, training);
  RECORD_FUNCTION("txl::relu_dropout", std::vector<c10::IValue>());  // named in operator profiles
  return HashedDropout::apply(x, p, true, draw_seed());
}

}  // namespace txl
