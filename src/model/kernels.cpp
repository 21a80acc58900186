#include "txl/model/kernels.h"

#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/record_function.h>

#include <functional>
#include <limits>
#include <vector>

#include "txl/model/chunk_sums.h"
#include "txl/model/vector_kernels.h"
#include "txl/platform/onednn.h"
#include "txl/platform/parallel.h"
#include "txl/platform/runtime.h"

namespace txl {

namespace {

// Storage offsets of every matrix of x's batch dimensions, in row-major batch order.
std::vector<int64_t> matrix_offsets(const torch::Tensor& x) {
  const int64_t batch_dims = x.dim() - 2;
  int64_t count = 1;
  for (int64_t d = 0; d < batch_dims; ++d) count *= x.size(d);
  std::vector<int64_t> offsets(static_cast<size_t>(count), x.storage_offset());
  int64_t repeat = count;
  for (int64_t d = 0; d < batch_dims; ++d) {
    // The index along dimension d is constant over blocks of repeat / size(d) matrices.
    const int64_t block = repeat / x.size(d);
    for (int64_t i = 0; i < count; ++i) {
      offsets[static_cast<size_t>(i)] += ((i / block) % x.size(d)) * x.stride(d);
    }
    repeat = block;
  }
  return offsets;
}

// The raw product, no autograd. a: [*, m, k], b: [*, k, n] with equal batch shapes.
torch::Tensor parallel_bmm(const torch::Tensor& a_in, const torch::Tensor& b_in) {
  const auto a = a_in.detach();
  const auto b = b_in.detach();
  const int64_t m = a.size(-2), k = a.size(-1), n = b.size(-1);
  auto out_sizes = a.sizes().vec();
  out_sizes.back() = n;
  auto out = torch::empty(out_sizes, a.options());  // [*, m, n]
  const auto oa = matrix_offsets(a), ob = matrix_offsets(b), oc = matrix_offsets(out);
  const int64_t count = static_cast<int64_t>(oa.size());
  parallel_chunks(count, 1, [&](int64_t begin, int64_t end) {
    // Below autograd: these per-matrix views need no graph and skip its bookkeeping.
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    for (int64_t i = begin; i < end; ++i) {
      const auto s = static_cast<size_t>(i);
      auto c = out.as_strided({m, n}, {out.stride(-2), out.stride(-1)}, oc[s]);
      at::mm_out(c, a.as_strided({m, k}, {a.stride(-2), a.stride(-1)}, oa[s]),
                 b.as_strided({k, n}, {b.stride(-2), b.stride(-1)}, ob[s]));
    }
  });
  return out;
}

// a and b expanded to their common (broadcast) batch shape.
std::pair<torch::Tensor, torch::Tensor> broadcast_batch(const torch::Tensor& a,
                                                        const torch::Tensor& b) {
  const auto batch =
      at::infer_size(a.sizes().slice(0, a.dim() - 2), b.sizes().slice(0, b.dim() - 2));
  auto a_shape = batch;
  a_shape.insert(a_shape.end(), {a.size(-2), a.size(-1)});
  auto b_shape = batch;
  b_shape.insert(b_shape.end(), {b.size(-2), b.size(-1)});
  return {a.expand(a_shape), b.expand(b_shape)};
}

// a @ b without autograd, batch dimensions broadcasting: oneDNN's matmul where it takes
// them (any strides, size-1 batch dimensions broadcast in place), else parallel_bmm over the
// expanded batch.
torch::Tensor raw_matmul(const torch::Tensor& a_in, const torch::Tensor& b_in) {
  auto a = a_in.detach();
  auto b = b_in.detach();
  while (a.dim() < b.dim()) a = a.unsqueeze(0);
  while (b.dim() < a.dim()) b = b.unsqueeze(0);
  auto out = onednn_matmul(a, b);
  if (out.defined()) return out;
  auto [ae, be] = broadcast_batch(a, b);
  return parallel_bmm(ae, be);
}

class BatchedMatmul : public torch::autograd::Function<BatchedMatmul> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& a,
                               const torch::Tensor& b) {
    ctx->save_for_backward({a, b});
    return raw_matmul(a, b);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& a = saved[0];
    const auto& b = saved[1];
    const auto& g = grads[0];  // [*, m, n]
    torch::Tensor grad_a, grad_b;
    if (ctx->needs_input_grad(0))
      grad_a = raw_matmul(g, b.transpose(-1, -2)).sum_to_size(a.sizes());
    if (ctx->needs_input_grad(1))
      grad_b = raw_matmul(a.transpose(-1, -2), g).sum_to_size(b.sizes());
    return {grad_a, grad_b};
  }
};

// a @ b (+ bias) for matrices: oneDNN's matmul, or LibTorch's where oneDNN declines.
torch::Tensor matrix_product(const torch::Tensor& a, const torch::Tensor& b,
                             const torch::Tensor& bias = {}) {
  auto out = onednn_matmul(a, b, bias);
  if (out.defined()) return out;
  return bias.defined() ? at::addmm(bias, a, b) : at::mm(a, b);
}

// y = x W^T (+ b) with its three products (forward, input and weight gradients) through
// matrix_product; x is seen as [N, in] rows. No bias is an empty tensor (autograd functions
// take no undefined inputs).
class Affine : public torch::autograd::Function<Affine> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight, const torch::Tensor& bias) {
    ctx->save_for_backward({x, weight});
    ctx->saved_data["bias"] = bias.numel() > 0;
    const auto rows = x.detach().reshape({-1, x.size(-1)});  // [N, in]
    auto y = matrix_product(rows, weight.detach().t(),
                            bias.numel() > 0 ? bias.detach() : torch::Tensor());  // [N, out]
    auto sizes = x.sizes().vec();
    sizes.back() = weight.size(0);
    return y.view(sizes);  // [..., out]
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto x = saved[0].detach();
    const auto weight = saved[1].detach();                  // [out, in]
    const auto g = grads[0].reshape({-1, weight.size(0)});  // [N, out]
    torch::Tensor grad_x, grad_w, grad_b;
    if (ctx->needs_input_grad(0)) grad_x = matrix_product(g, weight).view(x.sizes());
    if (ctx->needs_input_grad(1))
      grad_w = matrix_product(g.t(), x.reshape({-1, x.size(-1)}));  // [out, in]
    if (ctx->needs_input_grad(2) && ctx->saved_data["bias"].toBool()) grad_b = g.sum(0);
    return {grad_x, grad_w, grad_b};
  }
};

// Rows per block of the loss: a block's float32 scratch (32 x a 10k-token vocabulary = 1.3 MB)
// stays in the core's cache between the passes over it, where whole [N, V] float32
// temporaries (82 MB at 2048 x 10k) went through memory.
constexpr int64_t kNllRowBlock = 32;

// Calls f(first, n, scratch, sum) for the blocks of kNllRowBlock rows (the last may be
// shorter), the blocks split over the threads; scratch is a float32 [>= n, V] tensor of the
// calling thread, and sum its chunk's partial in `sums` (undefined without them). Inside,
// operators run single-threaded and without autograd.
void for_row_blocks_summed(
    int64_t rows, int64_t vocab,
    const std::function<void(int64_t, int64_t, torch::Tensor&, torch::Tensor&)>& f,
    ChunkSums* sums) {
  const int64_t blocks = (rows + kNllRowBlock - 1) / kNllRowBlock;
  parallel_chunks(blocks, 1, [&](int64_t begin, int64_t end) {
    torch::NoGradGuard no_grad;
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    auto scratch = torch::empty({std::min(kNllRowBlock, rows), vocab}, torch::kFloat32);
    auto sum = sums != nullptr ? sums->partial(begin) : torch::Tensor();
    for (int64_t b = begin; b < end; ++b) {
      const int64_t first = b * kNllRowBlock;
      f(first, std::min(kNllRowBlock, rows - first), scratch, sum);
    }
  });
}

// The same without sums: f(first, n, scratch).
void for_row_blocks(int64_t rows, int64_t vocab,
                    const std::function<void(int64_t, int64_t, torch::Tensor&)>& f) {
  for_row_blocks_summed(
      rows, vocab,
      [&](int64_t first, int64_t n, torch::Tensor& s, torch::Tensor&) { f(first, n, s); }, nullptr);
}

// Whether the loss's float32 row kernels (vector_kernels.h) take these logits: float32 rows
// of contiguous entries. Others (bf16) take LibTorch's operators.
bool float_rows(const torch::Tensor& logits) {
  return logits.scalar_type() == torch::kFloat32 && logits.stride(1) == 1;
}

// nll[i] = logsumexp(z[i]) - z[i, t_i] and lse[i] = logsumexp(z[i]) for the rows z = logits
// + bias (bias [V] float32, or empty: none), both float32 [N] (lse only when defined).
void nll_and_lse(const torch::Tensor& logits_in, const torch::Tensor& bias,
                 const torch::Tensor& targets, torch::Tensor nll, torch::Tensor lse) {
  const auto logits = logits_in.detach();
  const int64_t vocab = logits.size(1);
  const bool with_bias = bias.numel() > 0;
  for_row_blocks(logits.size(0), vocab, [&](int64_t first, int64_t n, torch::Tensor& s) {
    const auto block = logits.narrow(0, first, n);
    const auto t = targets.narrow(0, first, n).unsqueeze(1);                // [n, 1]
    auto block_nll = nll.narrow(0, first, n);                               // [n]
    auto target_logit = block.gather(1, t).squeeze(1).to(torch::kFloat32);  // [n]
    if (with_bias) target_logit.add_(bias.index_select(0, t.squeeze(1)));
    if (float_rows(logits)) {
      auto block_lse = lse.defined() ? lse.narrow(0, first, n) : torch::empty({n}, s.options());
      log_sum_exp_rows(block.data_ptr<float>(), with_bias ? bias.data_ptr<float>() : nullptr, n,
                       vocab, block.stride(0), block_lse.data_ptr<float>(), s.data_ptr<float>());
      torch::sub_out(block_nll, block_lse, target_logit);
      return;
    }
    auto logp = s.narrow(0, 0, n);
    const auto z = with_bias ? block.to(torch::kFloat32) + bias : block;  // [n, V]
    torch::log_softmax_out(logp, z, 1, torch::kFloat32);                  // [n, V]
    torch::neg_out(block_nll, logp.gather(1, t).squeeze(1));
    // log p_t = z_t - lse, so lse = z_t + nll.
    if (lse.defined()) {
      auto block_lse = lse.narrow(0, first, n);
      torch::add_out(block_lse, target_logit, block_nll);
    }
  });
}

// The loss keeps the logits (no copy) and one float per row; the backward recomputes the
// softmax from them block by block: d nll_i / d z_ij = softmax_ij - [j == t_i], and the
// bias's gradient is the sum of those over the rows, added up per thread while each block is
// in the cache (ChunkSums: the same sum whatever the threads' timing).
class TokenNll : public torch::autograd::Function<TokenNll> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& logits,
                               const torch::Tensor& targets, const torch::Tensor& bias) {
    const int64_t rows = logits.size(0);
    auto nll = torch::empty({rows}, logits.options().dtype(torch::kFloat32));  // [N]
    auto lse = torch::empty({rows}, logits.options().dtype(torch::kFloat32));  // [N]
    nll_and_lse(logits, bias.detach(), targets, nll, lse);
    ctx->save_for_backward({logits, targets, lse, bias});
    return nll;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto logits = saved[0].detach();                                           // [N, V]
    const auto& targets = saved[1];                                                  // [N]
    const auto& lse = saved[2];                                                      // [N]
    const auto bias = saved[3].detach();                                             // [V] or [0]
    const auto g = grads[0].detach().to(torch::kFloat32).contiguous().unsqueeze(1);  // [N, 1]
    auto grad = torch::empty_like(logits, torch::MemoryFormat::Contiguous);          // [N, V]
    const bool fp32 = logits.scalar_type() == torch::kFloat32;
    const bool with_bias = bias.numel() > 0;
    const int64_t vocab = logits.size(1);
    auto grad_bias = with_bias ? torch::zeros({vocab}, bias.options()) : torch::Tensor();  // [V]
    ChunkSums bias_sums(with_bias ? grad_bias : torch::empty({0}));
    const auto block_backward = [&](int64_t first, int64_t n, torch::Tensor& s,
                                    torch::Tensor& bias_sum) {
      auto p = fp32 ? grad.narrow(0, first, n) : s.narrow(0, 0, n);  // [n, V]
      const auto g_b = g.narrow(0, first, n);                        // [n, 1]
      if (float_rows(logits)) {
        const auto z = logits.narrow(0, first, n);
        scaled_softmax_rows(z.data_ptr<float>(), with_bias ? bias.data_ptr<float>() : nullptr,
                            lse.data_ptr<float>() + first, g_b.data_ptr<float>(), n, vocab,
                            z.stride(0), p.data_ptr<float>(), vocab);
      } else {
        torch::sub_out(p, logits.narrow(0, first, n), lse.narrow(0, first, n).unsqueeze(1));
        if (with_bias) p.add_(bias);
        p.exp_().mul_(g_b);
      }
      p.scatter_add_(1, targets.narrow(0, first, n).unsqueeze(1), -g_b);
      if (with_bias) bias_sum.add_(p.sum(0, false, torch::kFloat32));  // [V]
      if (!fp32) grad.narrow(0, first, n).copy_(p);
    };
    for_row_blocks_summed(logits.size(0), vocab, block_backward, with_bias ? &bias_sums : nullptr);
    if (with_bias) bias_sums.add_to(grad_bias);
    return {grad, torch::Tensor(), grad_bias};
  }
};

}  // namespace

torch::Tensor token_nll(const torch::Tensor& logits, const torch::Tensor& targets,
                        const torch::Tensor& bias) {
  TORCH_CHECK(logits.dim() == 2 && targets.dim() == 1 && targets.size(0) == logits.size(0),
              "token_nll needs logits [N, V] and targets [N], got ", logits.sizes(), " and ",
              targets.sizes());
  TORCH_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == logits.size(1) &&
                                  bias.scalar_type() == torch::kFloat32),
              "token_nll's bias must be float32 [", logits.size(1), "], got ",
              bias.defined() ? bias.sizes() : torch::IntArrayRef{});
  if (!logits.is_cpu()) {
    // GPUs: LibTorch's fused kernels, whose [N, V] float32 temporaries fit in its memory.
    const auto z = bias.defined() ? logits.to(torch::kFloat32) + bias : logits;
    return at::nll_loss(torch::log_softmax(z, 1, torch::kFloat32), targets, {},
                        at::Reduction::None);
  }
  RECORD_FUNCTION("txl::token_nll", std::vector<c10::IValue>());  // named in operator profiles
  // Autograd functions take no undefined inputs: no bias is an empty tensor.
  const auto b = bias.defined() ? bias : torch::empty({0}, logits.options().dtype(torch::kFloat32));
  if (torch::GradMode::is_enabled() && (logits.requires_grad() || b.requires_grad()))
    return TokenNll::apply(logits, targets, b);
  auto nll = torch::empty({logits.size(0)}, logits.options().dtype(torch::kFloat32));  // [N]
  nll_and_lse(logits, b.detach(), targets, nll, torch::Tensor());
  return nll;
}

torch::Tensor batched_matmul(const torch::Tensor& a, const torch::Tensor& b) {
  TORCH_CHECK(a.dim() >= 3 && b.dim() >= 3, "batched_matmul needs batched matrices, got ",
              a.sizes(), " and ", b.sizes());
  TORCH_CHECK(a.size(-1) == b.size(-2), "batched_matmul: inner sizes differ, ", a.sizes(), " @ ",
              b.sizes());
  int64_t count = 1;
  for (auto s : at::infer_size(a.sizes().slice(0, a.dim() - 2), b.sizes().slice(0, b.dim() - 2)))
    count *= s;
  if (!a.is_cpu() || a.scalar_type() != torch::kFloat32 || b.scalar_type() != torch::kFloat32)
    return torch::matmul(a, b);
  // oneDNN splits a single matrix over the threads too; parallel_bmm needs a matrix a thread.
  if (!onednn_matmul_enabled() && count < at::get_num_threads()) return torch::matmul(a, b);
  return BatchedMatmul::apply(a, b);
}

torch::Tensor affine(const torch::Tensor& x, const torch::Tensor& weight,
                     const torch::Tensor& bias) {
  const bool fp32 = x.scalar_type() == torch::kFloat32 && weight.scalar_type() == torch::kFloat32 &&
                    (!bias.defined() || bias.scalar_type() == torch::kFloat32);
  // Under autocast LibTorch's linear casts to bf16 and calls oneDNN itself.
  if (!onednn_for_layers() || !x.is_cpu() || !fp32 || x.dim() < 1 ||
      autocast_enabled(c10::DeviceType::CPU)) {
    return torch::linear(x, weight, bias);
  }
  return affine_on_onednn(x, weight, bias);
}

torch::Tensor affine_on_onednn(const torch::Tensor& x, const torch::Tensor& weight,
                               const torch::Tensor& bias) {
  TORCH_CHECK(
      x.is_cpu() && x.scalar_type() == torch::kFloat32 && weight.scalar_type() == torch::kFloat32,
      "affine_on_onednn takes float32 CPU tensors, got ", x.scalar_type(), " on ", x.device());
  // Names the layers' forward products in operator profiles, where oneDNN runs them inside
  // no operator (the backward is its autograd node's).
  RECORD_FUNCTION("txl::affine", std::vector<c10::IValue>());
  return Affine::apply(x, weight, bias.defined() ? bias : torch::empty({0}, weight.options()));
}

}  // namespace txl
