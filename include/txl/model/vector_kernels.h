// Row kernels over float32 memory where LibTorch 1.13's operators leave time on the table:
// the softmax of causal attention rows (the fused attention, fused_attention.h) and the
// log-sum-exp and softmax rows of the loss (token_nll, kernels.h). exp is fast_exp's
// polynomial, which the compiler vectorises; each kernel is compiled for AVX-512, AVX2 and
// baseline x86-64 and the copy is chosen from the CPU's flags at run time.
#pragma once

#include <cstdint>

#include "txl/platform/cpu.h"

namespace txl {

// The instruction sets the kernels below are compiled for (one copy each).
enum class VectorIsa { kBaseline, kAvx2, kAvx512 };
const char* to_string(VectorIsa isa);

// The widest copy `cpu` can run: AVX-512 (F, BW, DQ, VL), else AVX2 with FMA, else baseline.
// Decided from detect_cpu_flags() once per process (TXL_CPU_FLAGS applies).
VectorIsa vector_isa_for(const CpuFlags& cpu);
VectorIsa vector_isa();

// For each row i of a [rows, cols] logit matrix (rows `ld` floats apart), the keys j < n_i =
// min(offset + i + 1, cols) are visible (causal attention: offset = M):
//   p[i, j] = exp(s[i, j] - max_j' s[i, j']) / sum_j' exp(s[i, j'] - max)   for j < n_i
//   p[i, j] = 0                                                             for j >= n_i
// A term below e^-60 of the row's largest is 0 (no denormals). s and p may be the same memory. The
// masked keys are never read, so they need no -inf fill. exp is fast_exp's polynomial, which the
// compiler vectorises.
void causal_softmax(const float* s, float* p, int64_t rows, int64_t cols, int64_t ld,
                    int64_t offset, VectorIsa isa = vector_isa());

// exp(x[j]) into y[j] for j < n, for x <= 0 (below -87: exp(-87), about 1.6e-38):
// Cody-Waite reduction to 2^k exp(r), |r| <= ln2 / 2, and a degree-6 polynomial for exp(r).
// Within a few float ulps of exp (tested). Exposed for that test.
void fast_exp(const float* x, float* y, int64_t n, VectorIsa isa = vector_isa());

// lse[i] = log sum_j exp(z[i, j]) over the n entries of each row (rows `ld` floats apart),
// shifted by the row's max; terms below e^-60 of the max count as 0. scratch: n floats.
void log_sum_exp_rows(const float* z, int64_t rows, int64_t n, int64_t ld, float* lse,
                      float* scratch, VectorIsa isa = vector_isa());

// out[i, j] = exp(z[i, j] - lse[i]) * scale[i] (0 where the exponent is below -60): softmax
// rows times a factor each, the loss's gradient but for the target's -scale[i].
void scaled_softmax_rows(const float* z, const float* lse, const float* scale, int64_t rows,
                         int64_t n, int64_t ld_z, float* out, int64_t ld_out,
                         VectorIsa isa = vector_isa());

// The same two kernels over the rows z[i, :] + bias[:] (bias: n floats), which are never
// written out: the loss of logits whose bias the matrix product left out (token_nll's bias).
void log_sum_exp_rows(const float* z, const float* bias, int64_t rows, int64_t n, int64_t ld,
                      float* lse, float* scratch, VectorIsa isa = vector_isa());
void scaled_softmax_rows(const float* z, const float* bias, const float* lse, const float* scale,
                         int64_t rows, int64_t n, int64_t ld_z, float* out, int64_t ld_out,
                         VectorIsa isa = vector_isa());

// The softmax's backward for rows whose first n entries are the visible ones (the fused
// attention's row blocks): ds[i, j] = p[i, j] (dp[i, j] - sum_j' dp[i, j'] p[i, j']) for
// j < n, and 0 for n <= j < cols (p is 0 there). Rows `ld` floats apart.
void softmax_backward_rows(const float* p, const float* dp, float* ds, int64_t rows, int64_t n,
                           int64_t cols, int64_t ld, VectorIsa isa = vector_isa());

}  // namespace txl
