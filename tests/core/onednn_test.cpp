// oneDNN's matmul called directly (platform/onednn.h) against a float64 oracle, on the
// layouts the attention really hands it, and the cases it must decline so that callers fall
// back to LibTorch. Skipped, saying so, in a build without oneDNN's headers.
#include "txl/platform/onednn.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "test_util.h"
#include "txl/model/kernels.h"
#include "txl/platform/cpu.h"
#include "txl/platform/process.h"

namespace txl {
namespace {

using testing::max_abs_diff;

// sum_k a[..., i, k] b[..., k, j] in float64, batch dimensions broadcast.
torch::Tensor oracle(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kFloat64).unsqueeze(-1) * b.to(torch::kFloat64).unsqueeze(-3)).sum(-2);
}

// A macro, not a function: GTEST_SKIP() returns from the function it is written in, and
// must end the test itself (a helper's return let the test go on and fail).
#define SKIP_WITHOUT_ONEDNN() \
  if (!onednn_matmul_enabled()) GTEST_SKIP() << "oneDNN not used here: " << onednn_matmul_status()

// Below AVX2 oneDNN may have only reference kernels for some layouts (which onednn_matmul
// declines, correctly); the layouts are checked from AVX2 up.
bool below_avx2() {
  const auto status = onednn_matmul_status();
  return status.find("(sse41)") != std::string::npos || status.find("(avx)") != std::string::npos;
}

// q, k, v as AttentionImpl::project leaves them: views of one [B, Q | K, 3 | 2, H, D] tensor.
struct AttentionOperands {
  torch::Tensor q, k, v, r, probs;
};
AttentionOperands attention_operands(int64_t batch, int64_t heads, int64_t queries, int64_t keys,
                                     int64_t d) {
  AttentionOperands o;
  o.q = torch::randn({batch, queries, 3, heads, d}).select(2, 0).transpose(1, 2);  // [B,H,Q,D]
  auto kv = torch::randn({batch, keys, 2, heads, d}).unbind(2);
  o.k = kv[0].transpose(1, 2);                                                // [B, H, K, D]
  o.v = kv[1].transpose(1, 2);                                                // [B, H, K, D]
  o.r = torch::randn({heads, keys + 1, d}).unsqueeze(0);                      // [1, H, K+1, D]
  o.probs = torch::softmax(torch::randn({batch, heads, queries, keys}), -1);  // [B,H,Q,K]
  return o;
}

TEST(OneDnnMatmul, TakesTheAttentionLayoutsAndMatchesTheOracle) {
  SKIP_WITHOUT_ONEDNN();
  if (below_avx2()) GTEST_SKIP() << "oneDNN below AVX2 here: " << onednn_matmul_status();
  torch::manual_seed(3);
  const auto o = attention_operands(2, 3, 24, 40, 16);
  const auto g_scores = torch::randn({2, 3, 24, 40});               // [B, H, Q, K]
  const auto g_ctx = torch::randn({2, 24, 3, 16}).transpose(1, 2);  // [B, H, Q, D]
  const std::vector<std::pair<torch::Tensor, torch::Tensor>> cases = {
      {o.q, o.k.transpose(-1, -2)},                      // scores q.k
      {o.q, o.r.transpose(-1, -2)},                      // position scores, broadcast over B
      {o.probs, o.v},                                    // context p.v
      {g_ctx, o.v.transpose(-1, -2)},                    // backward: d probs
      {o.probs.transpose(-1, -2), g_ctx},                // backward: d v
      {g_scores, o.k},                                   // backward: d q
      {g_scores.transpose(-1, -2), o.q},                 // backward: d k
      {torch::randn({37, 19}), torch::randn({19, 23})},  // one matrix
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& [a, b] = cases[i];
    const auto out = onednn_matmul(a, b);
    ASSERT_TRUE(out.defined()) << "case " << i << ": oneDNN declined " << a.sizes() << " @ "
                               << b.sizes() << " (strides " << a.strides() << ", " << b.strides()
                               << ")";
    const auto want = oracle(a, b);
    ASSERT_EQ(out.sizes(), want.sizes()) << "case " << i;
    EXPECT_LT(max_abs_diff(out.to(torch::kFloat64), want), 1e-4) << "case " << i;
  }
}

TEST(OneDnnMatmul, AddsABiasInTheSamePass) {
  SKIP_WITHOUT_ONEDNN();
  torch::manual_seed(6);
  const auto x = torch::randn({37, 19});
  const auto w = torch::randn({23, 19});  // [out, in], read transposed as a layer does
  const auto bias = torch::randn({23});
  const auto out = onednn_matmul(x, w.t(), bias);
  ASSERT_TRUE(out.defined()) << "oneDNN declined the bias";
  EXPECT_LT(max_abs_diff(out, oracle(x, w.t()) + bias.to(torch::kFloat64)), 1e-4);
  EXPECT_FALSE(onednn_matmul(x, w.t(), torch::randn({22})).defined()) << "bias of the wrong size";
}

TEST(OneDnnMatmul, Bf16ProductsRoundOnlyTheirInputsAndOutput) {
  SKIP_WITHOUT_ONEDNN();
  torch::manual_seed(4);
  const auto a = torch::randn({4, 32, 48}).to(torch::kBFloat16);
  const auto b = torch::randn({4, 48, 40}).to(torch::kBFloat16);
  const auto out = onednn_matmul(a, b);
  // Below AVX-512 oneDNN has only its reference bf16 kernel, which onednn_matmul declines.
  if (!out.defined()) GTEST_SKIP() << "no tuned bf16 matmul in " << onednn_matmul_status();
  EXPECT_EQ(out.scalar_type(), torch::kBFloat16);
  // Exact products of bf16 inputs summed in float32, then one rounding to bf16: within a
  // bf16 ulp (2^-8 relative) of the float64 oracle.
  const auto want = oracle(a, b);
  const auto err = ((out.to(torch::kFloat64) - want).abs() / (want.abs() + 1.0)).max();
  EXPECT_LT(err.item<double>(), 1.0 / 128);
}

TEST(OneDnnMatmul, DeclinesWhatItCannotTakeSoCallersFallBack) {
  SKIP_WITHOUT_ONEDNN();
  const auto a = torch::randn({2, 3, 4});
  EXPECT_FALSE(onednn_matmul(a, torch::randn({2, 5, 6})).defined()) << "inner sizes differ";
  EXPECT_FALSE(onednn_matmul(a, torch::randn({3, 4, 6})).defined()) << "batch 2 against 3";
  EXPECT_FALSE(onednn_matmul(a, torch::randn({4, 6})).defined()) << "ranks differ";
  EXPECT_FALSE(onednn_matmul(a, torch::randn({2, 4, 6}).to(torch::kFloat64)).defined());
  EXPECT_FALSE(onednn_matmul(a.to(torch::kFloat64), torch::randn({2, 4, 6})).defined());
  // An expanded (stride 0) batch dimension is not a layout oneDNN reads.
  EXPECT_FALSE(onednn_matmul(a, torch::randn({1, 4, 6}).expand({2, 4, 6})).defined());
  EXPECT_FALSE(onednn_matmul(torch::randn({2, 0, 4}), torch::randn({2, 4, 6})).defined());
}

TEST(OneDnnMatmul, BatchedMatmulGradientsThroughItMatchTheOracle) {
  SKIP_WITHOUT_ONEDNN();
  torch::manual_seed(5);
  auto o = attention_operands(2, 3, 24, 40, 16);
  auto q = o.q.detach().requires_grad_(true);
  auto r = o.r.detach().requires_grad_(true);
  auto out = batched_matmul(q, r.transpose(-1, -2));  // [B, H, Q, K+1]
  const auto g = torch::randn(out.sizes());
  const auto grads = torch::autograd::grad({out}, {q, r}, {g});
  const auto q64 = o.q.to(torch::kFloat64).requires_grad_(true);
  const auto r64 = o.r.to(torch::kFloat64).requires_grad_(true);
  const auto want = oracle(q64, r64.transpose(-1, -2));
  const auto want_grads = torch::autograd::grad({want}, {q64, r64}, {g.to(torch::kFloat64)});
  EXPECT_LT(max_abs_diff(out.to(torch::kFloat64), want), 1e-4);
  EXPECT_LT(max_abs_diff(grads[0].to(torch::kFloat64), want_grads[0]), 1e-4);
  ASSERT_EQ(grads[1].sizes(), r.sizes()) << "the broadcast operand's gradient is summed over B";
  EXPECT_LT(max_abs_diff(grads[1].to(torch::kFloat64), want_grads[1]), 1e-4);
}

// The layers take oneDNN only with its AVX-512 kernels; the capped child below checks the
// other side of that decision.
TEST(OneDnnMatmul, LayersTakeItOnlyWithItsAvx512Kernels) {
  SKIP_WITHOUT_ONEDNN();
  const auto status = onednn_matmul_status();
  const bool avx512_kernels = status.find("(avx512") != std::string::npos;
  EXPECT_EQ(onednn_for_layers(), avx512_kernels) << status;
  EXPECT_NE(status.find(avx512_kernels ? "layers and attention" : "attention products (layers"),
            std::string::npos)
      << status;
  // Uncapped, oneDNN's kernels are AVX-512 exactly on AVX-512 CPUs.
  if (std::getenv("ONEDNN_MAX_CPU_ISA") == nullptr && std::getenv("DNNL_MAX_CPU_ISA") == nullptr) {
    const auto cpu = detect_cpu_flags();
    EXPECT_EQ(avx512_kernels, cpu.avx512f && cpu.avx512bw && cpu.avx512dq && cpu.avx512vl)
        << status;
  }
}

// oneDNN picks its kernels from the CPU at run time; capping its instruction set (it reads
// ONEDNN_MAX_CPU_ISA once, at start-up, hence a child process) shows what an AVX2-only CPU
// gets: the same layouts taken, by JIT kernels, with the oracle's numbers.
TEST(OneDnnMatmul, TakesTheSameLayoutsWithItsInstructionSetCappedAtAvx2) {
  SKIP_WITHOUT_ONEDNN();
  if (std::getenv("ONEDNN_MAX_CPU_ISA") != nullptr || std::getenv("DNNL_MAX_CPU_ISA") != nullptr)
    GTEST_SKIP() << "oneDNN's instruction set is capped already";
  // The child's output goes to a file: CTest would read a "[  SKIPPED ]" line of the child's
  // (its own bf16 test skips at AVX2) as this test's, and report it skipped whatever it found.
  const auto log = std::filesystem::temp_directory_path() /
                   ("txl-onednn-avx2-" + std::to_string(::getpid()) + ".log");
  const int code = run_process(
      {"/bin/sh", "-c", "ONEDNN_MAX_CPU_ISA=AVX2 \"$0\" --gtest_brief=1 \"$1\" > \"$2\" 2>&1",
       self_executable(), "--gtest_filter=OneDnnMatmul.*:Affine.*:BatchedMatmul.*", log.string()});
  std::ifstream in(log);
  const std::string output((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove(log);
  EXPECT_EQ(code, 0) << "the oneDNN tests failed with ONEDNN_MAX_CPU_ISA=AVX2:\n" << output;
  EXPECT_NE(output.find("PASSED"), std::string::npos) << output;
}

// c = op(a) op(b) + beta c on row-major memory with rows further apart than they are long,
// every transpose combination, beta 0 and 1, against the float64 oracle. `sgemm` is
// onednn_sgemm or torch_sgemm (the fallback where oneDNN is not enabled).
template <typename Sgemm>
void expect_row_major_products(Sgemm sgemm) {
  const int64_t m = 5, n = 7, k = 3, pad = 2;
  for (const bool a_t : {false, true}) {
    for (const bool b_t : {false, true}) {
      for (const float beta : {0.0f, 1.0f}) {
        SCOPED_TRACE(::testing::Message() << "a_t " << a_t << ", b_t " << b_t << ", beta " << beta);
        // Stored as [rows, cols + pad]; the product reads [rows, cols] of it.
        const auto stored = [](int64_t rows, int64_t cols) -> torch::Tensor {
          return torch::randn({rows, cols + pad}).narrow(1, 0, cols);
        };
        const torch::Tensor a = a_t ? stored(k, m) : stored(m, k);
        const torch::Tensor b = b_t ? stored(n, k) : stored(k, n);
        torch::Tensor c = stored(m, n);
        const auto expected = oracle(a_t ? a.t() : a, b_t ? b.t() : b) +
                              static_cast<double>(beta) * c.to(torch::kFloat64);
        sgemm(a_t, b_t, m, n, k, a.data_ptr<float>(), a.stride(0), b.data_ptr<float>(), b.stride(0),
              beta, c.data_ptr<float>(), c.stride(0));
        EXPECT_LT(max_abs_diff(c.to(torch::kFloat64), expected), 1e-5);
      }
    }
  }
}

TEST(RowMajorSgemm, TorchsProductOnTheMemoryMatchesTheOracle) {
  expect_row_major_products(torch_sgemm);
}

TEST(RowMajorSgemm, OneDnnsSgemmMatchesTheOracle) {
  SKIP_WITHOUT_ONEDNN();
  expect_row_major_products([](auto... args) { ASSERT_TRUE(onednn_sgemm(args...)); });
}

}  // namespace
}  // namespace txl
