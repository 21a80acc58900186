#include "txl/model/fused_attention.h"

#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/record_function.h>

#include <algorithm>
#include <vector>

#include "txl/model/chunk_sums.h"
#include "txl/model/vector_kernels.h"
#include "txl/platform/onednn.h"
#include "txl/platform/parallel.h"
#include "txl/platform/runtime.h"
#include "txl/util/env.h"

namespace txl {

namespace {

// The [Q, K] view rel_shift reads of one head's [Q, K+1] position scores (positional.h):
// element [i, j] is m[i, j + Q-1-i]. Every element of m but the first Q-1 and the last is
// read by exactly one element of the view.
torch::Tensor shifted_view(const torch::Tensor& m) {
  const int64_t q = m.size(0), k = m.size(1) - 1;
  return m.as_strided({q, k}, {k, 1}, m.storage_offset() + (q - 1));
}

// x itself when its rows can be read as a row-major matrix (unit stride along a row, rows
// at least a row apart), else a contiguous copy: a broadcast gradient has stride 0.
torch::Tensor readable_rows(const torch::Tensor& x) {
  if (x.stride(-1) == 1 && x.stride(-2) >= x.size(-1)) return x;
  return x.contiguous();
}

// The operands, detached, and what a head's pass needs besides.
struct Operands {
  torch::Tensor query, key, value;  // [B, H, Q | K, D], rows readable in place
  torch::Tensor shifted;            // [B, H, Q, K+1], each head's [Q, K+1] contiguous, or undefined
  torch::Tensor bias;               // [H, Q, K] rows readable in place, or undefined
  int64_t batch, heads, query_len, key_len, d_head, mem_len;
  int64_t row_block;  // queries per block: a block's products stop at its last visible key
};

// Queries per block of a head's pass. Block i0..i1-1 sees keys 0..M+i1-1 only, so the masked
// triangle is skipped but for a strip one block wide: with Q = K = 128 (no memory) the
// products cover 62.5% of [Q, K], with M = Q = 128 81%. TXL_FUSED_ROW_BLOCK=N sets it (tests
// use tiny blocks; a block as long as Q turns the skipping off).
int64_t row_block(int64_t query_len) {
  constexpr int64_t kRowBlock = 32;
  const int64_t rows = env_int("TXL_FUSED_ROW_BLOCK").value_or(kRowBlock);
  return std::min(rows, std::max<int64_t>(query_len, 1));
}

// The blocks of a head's rows, last first (its keys are all K keys), as (first row, rows,
// visible keys).
template <typename F>
void for_each_row_block(const Operands& o, F f) {
  const int64_t blocks = (o.query_len + o.row_block - 1) / o.row_block;
  for (int64_t block = blocks - 1; block >= 0; --block) {
    const int64_t first = block * o.row_block;
    const int64_t rows = std::min(o.row_block, o.query_len - first);
    f(first, rows, std::min(o.key_len, o.mem_len + first + rows));
  }
}

Operands operands(const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
                  const torch::Tensor& shifted, const torch::Tensor& bias, int64_t mem_len) {
  Operands o;
  o.query = readable_rows(query.detach());
  o.key = readable_rows(key.detach());
  o.value = readable_rows(value.detach());
  o.batch = query.size(0);
  o.heads = query.size(1);
  o.query_len = query.size(2);
  o.key_len = key.size(2);
  o.d_head = query.size(3);
  o.mem_len = mem_len;
  o.row_block = row_block(o.query_len);
  if (shifted.numel() > 0) {
    o.shifted = shifted.detach();
    if (o.shifted.stride(-1) != 1 || o.shifted.stride(-2) != o.key_len + 1)
      o.shifted = o.shifted.contiguous();
  }
  if (bias.numel() > 0) o.bias = readable_rows(bias.detach());
  return o;
}

// Calls f(b, h) for every head of every batch row, the heads split over the threads; inside,
// operators run single-threaded and below autograd. init(begin) runs once per chunk of heads
// (begin: its first item) first and done() after it, on the chunk's thread.
template <typename Init, typename F, typename Done>
void for_each_head(const Operands& o, Init init, F f, Done done) {
  parallel_chunks(o.batch * o.heads, 1, [&](int64_t begin, int64_t end) {
    torch::NoGradGuard no_grad;
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    auto state = init(begin);
    for (int64_t item = begin; item < end; ++item) f(state, item / o.heads, item % o.heads);
    done(state);
  });
}

// A row-major float32 matrix in place: element [i, j] at data[i * ld + j]. The per-block
// products read and write these directly (row_major_sgemm), where tensor views and
// LibTorch's dispatch cost about as much as a block's arithmetic.
struct Rows {
  float* data = nullptr;  // null: absent
  int64_t ld = 0;
  float* row(int64_t i) const { return data + i * ld; }
};

// At least a row apart: a single row's stride can be anything (LibTorch calls a tensor with
// one row contiguous whatever that stride is), and the products refuse ld < C.
int64_t row_distance(const torch::Tensor& t) { return std::max(t.stride(-2), t.size(-1)); }

// Head (b, h) of a [B, H, R, C] tensor whose rows are readable in place; absent if undefined.
Rows head_rows(const torch::Tensor& t, int64_t b, int64_t h) {
  if (!t.defined()) return {};
  return {t.data_ptr<float>() + b * t.stride(0) + h * t.stride(1), row_distance(t)};
}

// One head's operands, found once for all its row blocks.
struct Head {
  Rows query, key, value;  // [Q | K, D]
  Rows shifted;            // [Q, K]: the rel_shift view of [Q, K+1] (rows K apart), or absent
  Rows bias;               // [Q, K], or absent
};

Head head(const Operands& o, int64_t b, int64_t h) {
  Head x{head_rows(o.query, b, h), head_rows(o.key, b, h), head_rows(o.value, b, h), {}, {}};
  if (o.shifted.defined())
    x.shifted = {head_rows(o.shifted, b, h).data + (o.query_len - 1), o.key_len};
  if (o.bias.defined())
    x.bias = {o.bias.data_ptr<float>() + h * o.bias.stride(0), row_distance(o.bias)};
  return x;
}

// y[j] += x[j] for j < n.
void add_row(const float* x, float* y, int64_t n) {
  for (int64_t j = 0; j < n; ++j) y[j] += x[j];
}

// One head's logits for rows first..first+rows-1 and their visible keys 0..keys-1 into s
// (a [Q, K] matrix; the rest of those rows is left as it was: the softmax never reads it):
// query . key + shifted + bias.
void block_logits(const Operands& o, const Head& x, int64_t first, int64_t rows, int64_t keys,
                  float* s) {
  const int64_t k_len = o.key_len;
  float* s_block = s + first * k_len;
  row_major_sgemm(false, true, rows, keys, o.d_head, x.query.row(first), x.query.ld, x.key.data,
                  x.key.ld, 0.0f, s_block, k_len);
  for (const Rows* term : {&x.shifted, &x.bias}) {
    if (term->data == nullptr) continue;
    for (int64_t i = 0; i < rows; ++i) add_row(term->row(first + i), s_block + i * k_len, keys);
  }
}

// out [B, Q, H, D] = softmax(logits) . value per head, block by block of rows; the
// probabilities go to probs [B, H, Q, K] (contiguous) when it is defined (for the backward),
// else to a scratch matrix per thread. Keys past a block's last visible one get probability 0.
void forward_pass(const Operands& o, torch::Tensor& out, const torch::Tensor& probs) {
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
  const int64_t k_len = o.key_len;
  struct Scratch {
    torch::Tensor s, p;  // [Q, K]
  };
  for_each_head(
      o,
      [&](int64_t /*begin*/) {
        Scratch t{torch::empty({o.query_len, k_len}, f32), {}};
        if (!probs.defined()) t.p = torch::empty({o.query_len, k_len}, f32);
        return t;
      },
      [&](Scratch& t, int64_t b, int64_t h) {
        const Head x = head(o, b, h);
        float* s = t.s.data_ptr<float>();
        float* p = probs.defined() ? head_rows(probs, b, h).data : t.p.data_ptr<float>();
        const Rows o_bh{out.data_ptr<float>() + b * out.stride(0) + h * out.stride(2),
                        out.stride(1)};  // [Q, D], rows H*D apart
        for_each_row_block(o, [&](int64_t first, int64_t rows, int64_t keys) {
          block_logits(o, x, first, rows, keys, s);
          causal_softmax(s + first * k_len, p + first * k_len, rows, k_len, k_len,
                         o.mem_len + first);
          row_major_sgemm(false, false, rows, o.d_head, keys, p + first * k_len, k_len,
                          x.value.data, x.value.ld, 0.0f, o_bh.row(first), o_bh.ld);
        });
      },
      [](Scratch&) {});
}

// The gradients, each defined where the input needs one.
struct Grads {
  torch::Tensor query, key, value, shifted, bias;
};

// One head's gradients of its query, key and value (each where present), block by block of
// rows; leaves ds [Q, K] (zero past each row's visible keys) for the shifted and bias terms.
// p: the head's probabilities [Q, K]; g: the output's gradient [Q, D]; dp and ds: [Q, K]
// scratch.
void head_backward(const Operands& o, const Head& x, const float* p, const Rows& g,
                   const Head& grads, float* dp, float* ds) {
  const int64_t k_len = o.key_len, d = o.d_head;
  // Blocks last first: the first covers every key, so it sets dV and dKey (beta 0), and the
  // others add to their visible keys (beta 1).
  float beta = 0.0f;
  for_each_row_block(o, [&](int64_t first, int64_t rows, int64_t keys) {
    const float* p_block = p + first * k_len;  // [rows, K]
    const float* g_block = g.row(first);       // [rows, D]
    float* dp_block = dp + first * k_len;
    float* ds_block = ds + first * k_len;
    if (grads.value.data != nullptr) {  // dV[:keys] (+)= p^T g
      row_major_sgemm(true, false, keys, d, rows, p_block, k_len, g_block, g.ld, beta,
                      grads.value.data, grads.value.ld);
    }
    row_major_sgemm(false, true, rows, keys, d, g_block, g.ld, x.value.data, x.value.ld, 0.0f,
                    dp_block, k_len);  // dp = g V^T
    softmax_backward_rows(p_block, dp_block, ds_block, rows, keys, k_len, k_len);
    if (grads.query.data != nullptr) {  // dQuery = ds Key
      row_major_sgemm(false, false, rows, d, keys, ds_block, k_len, x.key.data, x.key.ld, 0.0f,
                      grads.query.row(first), grads.query.ld);
    }
    if (grads.key.data != nullptr) {  // dKey[:keys] (+)= ds^T Query
      row_major_sgemm(true, false, keys, d, rows, ds_block, k_len, x.query.row(first), x.query.ld,
                      beta, grads.key.data, grads.key.ld);
    }
    beta = 1.0f;
  });
}

// Per head, with p the probabilities and g the output's gradient [Q, D]:
//   dV = p^T g     dp = g V^T     ds = p * (dp - rowsum(dp * p))   (zero where p = 0)
//   dQuery = ds Key     dKey = ds^T Query     dShifted[i, j + Q-1-i] = ds[i, j]
//   dBias = sum over the batch of ds.
void backward_pass(const Operands& o, const torch::Tensor& probs, const torch::Tensor& g,
                   Grads& d) {
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
  const int64_t q_len = o.query_len, k_len = o.key_len;
  // The chunks' bias gradients, added in chunk order: the same sum whatever the threads'
  // timing.
  ChunkSums bias_sums(d.bias.defined() ? d.bias : torch::empty({0}));
  struct Scratch {
    torch::Tensor dp, ds, bias;  // [Q, K], [Q, K], this chunk's [H, Q, K] bias gradient
  };
  for_each_head(
      o,
      [&](int64_t begin) {
        Scratch t{torch::empty({q_len, k_len}, f32), torch::empty({q_len, k_len}, f32), {}};
        if (d.bias.defined()) t.bias = bias_sums.partial(begin);
        return t;
      },
      [&](Scratch& t, int64_t b, int64_t h) {
        const Head grads{
            head_rows(d.query, b, h), head_rows(d.key, b, h), head_rows(d.value, b, h), {}, {}};
        head_backward(o, head(o, b, h), head_rows(probs, b, h).data, head_rows(g, b, h), grads,
                      t.dp.data_ptr<float>(), t.ds.data_ptr<float>());
        if (d.shifted.defined()) {
          auto m = d.shifted[b][h];  // [Q, K+1]
          shifted_view(m).copy_(t.ds);
          auto flat = m.view({-1});  // the Q elements no logit reads
          flat.narrow(0, 0, q_len - 1).zero_();
          flat.narrow(0, flat.numel() - 1, 1).zero_();
        }
        if (t.bias.defined()) t.bias[h].add_(t.ds);
      },
      [](Scratch&) {});
  if (d.bias.defined()) bias_sums.add_to(d.bias);
}

// Inputs that are absent come as empty tensors: autograd functions take no undefined ones.
class FusedAttention : public torch::autograd::Function<FusedAttention> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& query,
                               const torch::Tensor& key, const torch::Tensor& value,
                               const torch::Tensor& shifted, const torch::Tensor& bias,
                               int64_t mem_len) {
    const auto o = operands(query, key, value, shifted, bias, mem_len);
    auto out = torch::empty({o.batch, o.query_len, o.heads, o.d_head}, query.options());
    auto probs = torch::empty({o.batch, o.heads, o.query_len, o.key_len}, query.options());
    forward_pass(o, out, probs);
    ctx->save_for_backward({query, key, value, shifted, bias, probs});
    ctx->saved_data["mem_len"] = mem_len;
    return out.permute({0, 2, 1, 3});  // [B, H, Q, D]
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto o = operands(saved[0], saved[1], saved[2], saved[3], saved[4],
                            ctx->saved_data["mem_len"].toInt());
    const auto needs = [&](size_t i) { return ctx->needs_input_grad(i) && saved[i].numel() > 0; };
    Grads d;
    if (needs(0)) d.query = torch::empty(o.query.sizes(), o.query.options());
    if (needs(1)) d.key = torch::empty(o.key.sizes(), o.key.options());
    if (needs(2)) d.value = torch::empty(o.value.sizes(), o.value.options());
    if (needs(3)) d.shifted = torch::empty(o.shifted.sizes(), o.shifted.options());
    if (needs(4)) d.bias = torch::zeros(o.bias.sizes(), o.bias.options());
    backward_pass(o, saved[5], readable_rows(grads[0].detach()), d);
    return {d.query, d.key, d.value, d.shifted, d.bias, torch::Tensor()};
  }
};

}  // namespace

bool fused_attention_applies(const torch::Tensor& v) {
  if (env_is("TXL_FUSED_ATTENTION", "0")) return false;
  return v.is_cpu() && v.scalar_type() == torch::kFloat32 &&
         !autocast_enabled(c10::DeviceType::CPU);
}

torch::Tensor fused_attention(const ScoreTerms& terms, const torch::Tensor& v, int64_t mem_len) {
  const auto& q = terms.query;
  TORCH_CHECK(q.dim() == 4 && terms.key.dim() == 4 && v.sizes() == terms.key.sizes() &&
                  q.size(0) == v.size(0) && q.size(1) == v.size(1) && q.size(3) == v.size(3) &&
                  v.size(2) == q.size(2) + mem_len,
              "fused_attention needs query [B, H, Q, D], key and value [B, H, Q+M, D], got ",
              q.sizes(), ", ", terms.key.sizes(), ", ", v.sizes(), " with M = ", mem_len);
  const auto none = torch::empty({0}, q.options());
  const auto shifted = terms.shifted.defined() ? terms.shifted : none;
  const auto bias = terms.bias.defined() ? terms.bias : none;
  for (const auto* t : {&terms.key, &v, &shifted, &bias}) {
    TORCH_CHECK(t->scalar_type() == torch::kFloat32 && t->is_cpu() && q.is_cpu() &&
                    q.scalar_type() == torch::kFloat32,
                "fused_attention takes float32 CPU tensors");
  }
  const bool grad = torch::GradMode::is_enabled() &&
                    (q.requires_grad() || terms.key.requires_grad() || v.requires_grad() ||
                     shifted.requires_grad() || bias.requires_grad());
  // Names the forward in operator profiles, where no operator inside it would (the backward
  // is its autograd node's).
  RECORD_FUNCTION("txl::fused_attention", std::vector<c10::IValue>());
  if (grad) return FusedAttention::apply(q, terms.key, v, shifted, bias, mem_len);
  const auto o = operands(q, terms.key, v, shifted, bias, mem_len);
  auto out = torch::empty({o.batch, o.query_len, o.heads, o.d_head}, q.options());
  forward_pass(o, out, torch::Tensor());
  return out.permute({0, 2, 1, 3});  // [B, H, Q, D]
}

}  // namespace txl
