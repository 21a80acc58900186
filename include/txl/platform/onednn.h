// Matrix products through oneDNN's matmul primitive, called directly.
//
// LibTorch 1.13 sends fp32 matrix products to the BLAS (OpenBLAS) and batched ones through
// a loop of small GEMMs; oneDNN's JIT matmul takes any strides and batch layout as they come
// and measured 3-5x faster at the attention's shapes (64 matrices of 128x64 by 64x256) on a
// 2-core AMD EPYC (Zen 5), and on the same machine with its instruction set capped at AVX2.
// A build without oneDNN's headers (e.g. against a PyTorch wheel, whose oneDNN is internal)
// compiles this as "not available" and the callers keep LibTorch's operators.
#pragma once

#include <torch/torch.h>

#include <string>

namespace txl {

// Whether onednn_matmul can run here: built with oneDNN and not switched off by the
// environment (TXL_ONEDNN=0, for comparing against LibTorch's path).
bool onednn_matmul_enabled();

// Whether the layers' linear maps (txl::affine) go to oneDNN too: only where it runs its
// AVX-512 kernels. With its instruction set capped at AVX2 its weight-gradient products
// (g^T x) measured 0.53-0.73x OpenBLAS's Haswell kernels (fc2, fc1 of the reference config,
// AMD EPYC Zen 5), and its forward products 0.89-1.07x; its batched attention products
// stayed 2.5x faster, so those take oneDNN at any instruction set.
bool onednn_for_layers();

// Matmul kernels (oneDNN primitives) made so far in this process: each new combination of
// shapes JIT-compiles one and keeps it, so a product whose rows change every step belongs on
// LibTorch's path instead (adaptive_softmax.cpp). 0 without oneDNN.
int64_t onednn_matmul_kernels_made();

// "oneDNN 2.6.3 (...) for ..." or why not, for txl info and the bench.
std::string onednn_matmul_status();

// out[..., m, n] = a[..., m, k] @ b[..., k, n] (+ bias[n] when given, added in the same
// pass) for CPU tensors of one dtype (float32 or bfloat16) of equal rank (2 to 6), any
// strides; a batch dimension of size 1 in a or b broadcasts. Returns an undefined tensor,
// having done nothing, when oneDNN is not enabled, cannot take these tensors, or would run its
// reference (untuned) implementation; the caller then uses LibTorch's own operator. No
// autograd.
torch::Tensor onednn_matmul(const torch::Tensor& a, const torch::Tensor& b,
                            const torch::Tensor& bias = {});

// One float32 product on row-major memory through oneDNN's sgemm, with no tensor in between:
//   c[m, n] = op(a) op(b) + beta c,   op(x) = x or x^T (a_t, b_t); rows lda, ldb, ldc apart.
// For the fused attention's small per-block products, where LibTorch's views and dispatch
// cost about as much as the arithmetic. Returns false, having done nothing, where oneDNN is
// not enabled. Single-threaded inside a parallel region.
bool onednn_sgemm(bool a_t, bool b_t, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                  const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// The same product through LibTorch's mm on views of the same memory; beta is 0 or 1.
void torch_sgemm(bool a_t, bool b_t, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                 const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// oneDNN's sgemm where enabled, else torch_sgemm.
inline void row_major_sgemm(bool a_t, bool b_t, int64_t m, int64_t n, int64_t k, const float* a,
                            int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                            int64_t ldc) {
  if (!onednn_sgemm(a_t, b_t, m, n, k, a, lda, b, ldb, beta, c, ldc))
    torch_sgemm(a_t, b_t, m, n, k, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace txl
