#include "txl/model/vector_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>

// Each kernel is compiled three times, for baseline x86-64, AVX2 and AVX-512, and the copy is
// chosen at run time from the CPU's flags: the binary assumes nothing about the machine.
#if defined(__x86_64__) && defined(__GNUC__)
#define TXL_TARGET_AVX2 __attribute__((target("avx2,fma")))
#define TXL_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")))
#define TXL_HAS_ISA_COPIES 1
#else
#define TXL_HAS_ISA_COPIES 0
#endif
#define TXL_INLINE inline __attribute__((always_inline))

namespace txl {

namespace {

constexpr int kLanes = 16;  // independent accumulators: one or two vector registers' worth

// exp(x) for one element, written so a loop of it vectorises (no calls, no branches).
TXL_INLINE float exp_element(float x) {
  x = std::max(x, -87.0f);
  const float k = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // round(x / ln 2)
  const float r = x - k * 0.693359375f + k * 2.12194440e-4f;  // x - k ln 2, in two parts
  float y = 1.9875691500e-4f;
  y = y * r + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  y = y * r * r + r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(k) + 127) << 23;  // 2^k, k >= -126
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return y * scale;
}

TXL_INLINE void exp_body(const float* x, float* y, int64_t n) {
  for (int64_t j = 0; j < n; ++j) y[j] = exp_element(x[j]);
}

TXL_INLINE float row_max(const float* x, int64_t n) {
  float acc[kLanes];
  std::fill(acc, acc + kLanes, x[0]);
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int l = 0; l < kLanes; ++l) acc[l] = std::max(acc[l], x[j + l]);
  float m = x[0];
  for (; j < n; ++j) m = std::max(m, x[j]);
  for (int l = 0; l < kLanes; ++l) m = std::max(m, acc[l]);
  return m;
}

// Below e^-60 of the row's largest term a term is 0: 19 orders of magnitude below what the
// float sum resolves, and it keeps denormals (about 100 cycles an operation on x86) out of
// the normalisation and of the backward's products.
constexpr float kNegligible = -60.0f;

// y[j] = exp(x[j] - shift), 0 where that is below e^kNegligible; returns the sum of the y.
TXL_INLINE float exp_sum(const float* x, float shift, float* y, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    const float d = x[j] - shift;
    y[j] = d < kNegligible ? 0.0f : exp_element(d);
  }
  float acc[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int l = 0; l < kLanes; ++l) acc[l] += y[j + l];
  float sum = 0;
  for (; j < n; ++j) sum += y[j];
  for (int l = 0; l < kLanes; ++l) sum += acc[l];
  return sum;
}

TXL_INLINE void softmax_body(const float* s, float* p, int64_t rows, int64_t cols, int64_t ld,
                             int64_t offset) {
  for (int64_t i = 0; i < rows; ++i) {
    const float* x = s + i * ld;
    float* y = p + i * ld;
    const int64_t n = std::min(offset + i + 1, cols);
    const float factor = 1.0f / exp_sum(x, row_max(x, n), y, n);
    for (int64_t j = 0; j < n; ++j) y[j] *= factor;
    std::fill(y + n, y + cols, 0.0f);
  }
}

// With a bias, each row is first added to it in the scratch row (cache-resident), which the
// exponentials then overwrite.
TXL_INLINE void lse_body(const float* z, const float* bias, int64_t rows, int64_t n, int64_t ld,
                         float* lse, float* scratch) {
  for (int64_t i = 0; i < rows; ++i) {
    const float* x = z + i * ld;
    if (bias != nullptr) {
      for (int64_t j = 0; j < n; ++j) scratch[j] = x[j] + bias[j];
      x = scratch;
    }
    const float top = row_max(x, n);
    lse[i] = top + std::log(exp_sum(x, top, scratch, n));
  }
}

// Two loops without a branch inside, so that both vectorise.
TXL_INLINE void scaled_softmax_body(const float* z, const float* bias, const float* lse,
                                    const float* scale, int64_t rows, int64_t n, int64_t ld_z,
                                    float* out, int64_t ld_out) {
  for (int64_t i = 0; i < rows; ++i) {
    const float* x = z + i * ld_z;
    float* y = out + i * ld_out;
    const float shift = lse[i], factor = scale[i];
    if (bias == nullptr) {
      for (int64_t j = 0; j < n; ++j) {
        const float d = x[j] - shift;
        y[j] = (d < kNegligible ? 0.0f : exp_element(d)) * factor;
      }
    } else {
      for (int64_t j = 0; j < n; ++j) {
        const float d = x[j] + bias[j] - shift;
        y[j] = (d < kNegligible ? 0.0f : exp_element(d)) * factor;
      }
    }
  }
}

// ds = p * (dp - sum_j dp p) over the first `n` entries of each row, 0 over the rest up to
// cols; the dot product in kLanes independent sums so that it vectorises.
TXL_INLINE void softmax_backward_body(const float* p, const float* dp, float* ds, int64_t rows,
                                      int64_t n, int64_t cols, int64_t ld) {
  for (int64_t i = 0; i < rows; ++i) {
    const float* p_row = p + i * ld;
    const float* dp_row = dp + i * ld;
    float* ds_row = ds + i * ld;
    float acc[kLanes] = {};
    int64_t j = 0;
    for (; j + kLanes <= n; j += kLanes)
      for (int l = 0; l < kLanes; ++l) acc[l] += dp_row[j + l] * p_row[j + l];
    float dot = 0.0f;
    for (; j < n; ++j) dot += dp_row[j] * p_row[j];
    for (int l = 0; l < kLanes; ++l) dot += acc[l];
    for (j = 0; j < n; ++j) ds_row[j] = p_row[j] * (dp_row[j] - dot);
    std::fill(ds_row + n, ds_row + cols, 0.0f);
  }
}

// Every kernel in one table per instruction set, each entry calling the inlined body, so the
// body is compiled for that set.
struct Kernels {
  void (*softmax)(const float*, float*, int64_t, int64_t, int64_t, int64_t);
  void (*exp)(const float*, float*, int64_t);
  void (*lse)(const float*, const float*, int64_t, int64_t, int64_t, float*, float*);
  void (*scaled_softmax)(const float*, const float*, const float*, const float*, int64_t, int64_t,
                         int64_t, float*, int64_t);
  void (*softmax_backward)(const float*, const float*, float*, int64_t, int64_t, int64_t, int64_t);
};

#define TXL_KERNEL_TABLE(NAME, TARGET)                                                           \
  TARGET void NAME##_softmax(const float* s, float* p, int64_t rows, int64_t cols, int64_t ld,   \
                             int64_t offset) {                                                   \
    softmax_body(s, p, rows, cols, ld, offset);                                                  \
  }                                                                                              \
  TARGET void NAME##_exp(const float* x, float* y, int64_t n) { exp_body(x, y, n); }             \
  TARGET void NAME##_lse(const float* z, const float* bias, int64_t rows, int64_t n, int64_t ld, \
                         float* lse, float* scratch) {                                           \
    lse_body(z, bias, rows, n, ld, lse, scratch);                                                \
  }                                                                                              \
  TARGET void NAME##_scaled_softmax(const float* z, const float* bias, const float* lse,         \
                                    const float* scale, int64_t rows, int64_t n, int64_t ld_z,   \
                                    float* out, int64_t ld_out) {                                \
    scaled_softmax_body(z, bias, lse, scale, rows, n, ld_z, out, ld_out);                        \
  }                                                                                              \
  TARGET void NAME##_softmax_backward(const float* p, const float* dp, float* ds, int64_t rows,  \
                                      int64_t n, int64_t cols, int64_t ld) {                     \
    softmax_backward_body(p, dp, ds, rows, n, cols, ld);                                         \
  }                                                                                              \
  constexpr Kernels NAME = {NAME##_softmax, NAME##_exp, NAME##_lse, NAME##_scaled_softmax,       \
                            NAME##_softmax_backward};

TXL_KERNEL_TABLE(baseline, )
#if TXL_HAS_ISA_COPIES
TXL_KERNEL_TABLE(avx2, TXL_TARGET_AVX2)
TXL_KERNEL_TABLE(avx512, TXL_TARGET_AVX512)
#endif

const Kernels& kernels(VectorIsa isa) {
#if TXL_HAS_ISA_COPIES
  if (isa == VectorIsa::kAvx512) return avx512;
  if (isa == VectorIsa::kAvx2) return avx2;
#endif
  (void)isa;
  return baseline;
}

}  // namespace

const char* to_string(VectorIsa isa) {
  switch (isa) {
    case VectorIsa::kAvx512:
      return "avx512";
    case VectorIsa::kAvx2:
      return "avx2";
    case VectorIsa::kBaseline:
      break;
  }
  return "baseline";
}

VectorIsa vector_isa_for(const CpuFlags& cpu) {
  if (!TXL_HAS_ISA_COPIES) return VectorIsa::kBaseline;
  if (cpu.avx512f && cpu.avx512bw && cpu.avx512dq && cpu.avx512vl && cpu.avx2 && cpu.fma)
    return VectorIsa::kAvx512;
  if (cpu.avx2 && cpu.fma) return VectorIsa::kAvx2;
  return VectorIsa::kBaseline;
}

VectorIsa vector_isa() {
  static const VectorIsa isa = vector_isa_for(detect_cpu_flags());
  return isa;
}

void causal_softmax(const float* s, float* p, int64_t rows, int64_t cols, int64_t ld,
                    int64_t offset, VectorIsa isa) {
  kernels(isa).softmax(s, p, rows, cols, ld, offset);
}

void fast_exp(const float* x, float* y, int64_t n, VectorIsa isa) { kernels(isa).exp(x, y, n); }

void log_sum_exp_rows(const float* z, int64_t rows, int64_t n, int64_t ld, float* lse,
                      float* scratch, VectorIsa isa) {
  kernels(isa).lse(z, nullptr, rows, n, ld, lse, scratch);
}

void log_sum_exp_rows(const float* z, const float* bias, int64_t rows, int64_t n, int64_t ld,
                      float* lse, float* scratch, VectorIsa isa) {
  kernels(isa).lse(z, bias, rows, n, ld, lse, scratch);
}

void scaled_softmax_rows(const float* z, const float* lse, const float* scale, int64_t rows,
                         int64_t n, int64_t ld_z, float* out, int64_t ld_out, VectorIsa isa) {
  kernels(isa).scaled_softmax(z, nullptr, lse, scale, rows, n, ld_z, out, ld_out);
}

void scaled_softmax_rows(const float* z, const float* bias, const float* lse, const float* scale,
                         int64_t rows, int64_t n, int64_t ld_z, float* out, int64_t ld_out,
                         VectorIsa isa) {
  kernels(isa).scaled_softmax(z, bias, lse, scale, rows, n, ld_z, out, ld_out);
}

void softmax_backward_rows(const float* p, const float* dp, float* ds, int64_t rows, int64_t n,
                           int64_t cols, int64_t ld, VectorIsa isa) {
  kernels(isa).softmax_backward(p, dp, ds, rows, n, cols, ld);
}

}  // namespace txl
