// Faster equivalents of LibTorch 1.13 CPU operations the model spends its time in. Each
// computes the same mathematical function as the operation it replaces (tests compare
// them); they differ in how the work is spread over threads and memory.
// On other devices (CUDA) each calls the LibTorch operation it replaces.
#pragma once

#include <torch/torch.h>

#include "txl/model/dropout.h"  // apply_dropout, relu_dropout: kernels of the same kind

namespace txl {

// out[..., m, n] = a[..., m, k] @ b[..., k, n]; leading (batch) dimensions broadcast; with
// autograd. LibTorch 1.13's fp32 bmm loops over the batch calling a multi-threaded GEMM
// per small matrix (a thread hand-off per matrix) and copies strided operands first; this
// hands the tensors as they lie to oneDNN's matmul (platform/onednn.h), or, where oneDNN is
// not available, gives each thread a share of the matrices with single-threaded GEMMs.
// Other dtypes (bf16: LibTorch already calls oneDNN) go to torch::matmul, and so do batches
// smaller than the thread count without oneDNN.
torch::Tensor batched_matmul(const torch::Tensor& a, const torch::Tensor& b);

// y[..., out] = x[..., in] @ weight[out, in]^T + bias[out] (bias optional), with autograd:
// torch::linear's function. In fp32 on the CPU (autocast off), where oneDNN runs its AVX-512
// kernels (onednn_for_layers), its three products go to oneDNN's matmul, which measured
// 1.6-2.1x OpenBLAS's (Haswell kernels) at the model's shapes on a 2-core AMD EPYC (Zen 5);
// elsewhere torch::linear.
// Not called linear: argument-dependent lookup would also find at::linear.
torch::Tensor affine(const torch::Tensor& x, const torch::Tensor& weight,
                     const torch::Tensor& bias = {});

// affine's oneDNN path whatever onednn_for_layers() says (each product falls back to
// LibTorch's where oneDNN declines, or without oneDNN): fp32 CPU tensors only. What affine
// runs on AVX-512 CPUs, callable on any, for tests.
torch::Tensor affine_on_onednn(const torch::Tensor& x, const torch::Tensor& weight,
                               const torch::Tensor& bias = {});

// Per-token negative log-likelihood in float32, with autograd:
// nll[i] = logsumexp(logits[i, :]) - logits[i, targets[i]].      logits [N, V], targets [N] -> [N]
// The same numbers as cross_entropy(logits.float(), targets, reduction none). It works through
// the rows in small blocks, so no [N, V] float32 tensor is ever made: the forward keeps the
// logits themselves and one log-sum-exp per row, and its backward recomputes softmax * g -
// onehot * g from them block by block into the gradient (logits' dtype), where log_softmax +
// nll_loss write and keep [N, V] float32 log-probabilities, fill a [N, V] zero gradient and
// read both again.
// With a bias [V] (float32), the rows are logits + bias, added on the fly and never written
// out, and the bias gets its gradient: the output layer's matrix product can leave its bias
// out, which saves a pass over the [N, V] logits forward (the bias copied into them) and one
// backward (the bias gradient's column sums).
torch::Tensor token_nll(const torch::Tensor& logits, const torch::Tensor& targets,
                        const torch::Tensor& bias = {});

}  // namespace txl
