// clip_gradients and total_grad_norm against torch::nn::utils::clip_grad_norm_, the function
// they replace: the same norm and the same scaled gradients, with LibTorch's multi-tensor
// kernels and without them (TXL_MULTI_TENSOR=0), on the CPU and, where there is one, a GPU.
#include "txl/train/grad_clip.h"

#include <gtest/gtest.h>

#include <cmath>

#include "test_util.h"

namespace txl {
namespace {

using testing::max_abs_diff;
using testing::ScopedEnv;

// Parameters with gradients of global norm about `scale` * 190; the third has none.
std::vector<torch::Tensor> with_gradients(double scale, torch::Device device = torch::kCPU) {
  torch::manual_seed(3);
  std::vector<torch::Tensor> params;
  for (const int64_t n : {4000, 33, 7, 30000}) {
    params.push_back(torch::randn({n}).to(device).requires_grad_());
  }
  for (size_t i = 0; i < params.size(); ++i) {
    if (i != 2) params[i].mutable_grad() = (scale * torch::randn({params[i].numel()})).to(device);
  }
  return params;
}

// Clips one copy with clip_gradients and one (on the CPU) with torch's function: the norms
// agree within `tolerance` relative, and so do the gradients.
void expect_clip_follows_torch(double scale, double max_norm, torch::Device device,
                               double tolerance) {
  auto ours = with_gradients(scale, device);
  auto theirs = with_gradients(scale);
  const double norm = clip_gradients(ours, max_norm);
  const double expected = torch::nn::utils::clip_grad_norm_(theirs, max_norm);
  EXPECT_NEAR(norm, expected, tolerance * expected);
  for (size_t i = 0; i < ours.size(); ++i) {
    ASSERT_EQ(ours[i].grad().defined(), theirs[i].grad().defined()) << "parameter " << i;
    if (!ours[i].grad().defined()) continue;
    EXPECT_LE(max_abs_diff(ours[i].grad().cpu(), theirs[i].grad()),
              tolerance * theirs[i].grad().abs().max().item<double>())
        << "parameter " << i;
  }
}

TEST(GradClip, ScalesAsTorchsClipGradNormDoesWithAndWithoutMultiTensorKernels) {
  for (const char* setting : {static_cast<const char*>(nullptr), "0"}) {
    SCOPED_TRACE(setting == nullptr ? "multi-tensor kernels" : "TXL_MULTI_TENSOR=0");
    ScopedEnv env("TXL_MULTI_TENSOR", setting);
    expect_clip_follows_torch(1.0, 0.25, torch::kCPU, 1e-6);   // clipped: norm about 190
    expect_clip_follows_torch(1e-4, 0.25, torch::kCPU, 1e-6);  // norm about 0.019: unchanged
    auto small = with_gradients(1e-4);
    const auto before = small[0].grad().clone();
    clip_gradients(small, 0.25);
    EXPECT_EQ(max_abs_diff(small[0].grad(), before), 0.0) << "a norm under max_norm: no change";
  }
}

TEST(GradClip, TotalNormIsTheNormOfEveryGradientTogetherAndChangesNone) {
  auto params = with_gradients(1.0);
  double sum = 0;
  for (const auto& p : params) {
    if (p.grad().defined()) sum += p.grad().pow(2).sum().item<double>();
  }
  const auto before = params[3].grad().clone();
  EXPECT_NEAR(total_grad_norm(params), std::sqrt(sum), 1e-5 * std::sqrt(sum));
  EXPECT_EQ(max_abs_diff(params[3].grad(), before), 0.0);
  {
    ScopedEnv env("TXL_MULTI_TENSOR", "0");
    EXPECT_NEAR(total_grad_norm(params), std::sqrt(sum), 1e-5 * std::sqrt(sum));
  }
}

TEST(GradClip, NoGradientsGiveZeroAndANonFiniteGradientANonFiniteNorm) {
  std::vector<torch::Tensor> none{torch::ones({3}).requires_grad_()};
  EXPECT_EQ(clip_gradients(none, 1.0), 0.0);
  EXPECT_EQ(total_grad_norm(none), 0.0);
  auto params = with_gradients(1.0);
  params[1].mutable_grad()[5] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(std::isfinite(total_grad_norm(params)));
  EXPECT_FALSE(std::isfinite(clip_gradients(params, 1.0)));
  EXPECT_THROW(clip_gradients(params, 0.0), c10::Error);
}

TEST(GradClipOnCuda, FollowsTorchsClipGradNormOnTheCpu) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device in this LibTorch";
  for (const char* setting : {static_cast<const char*>(nullptr), "0"}) {
    SCOPED_TRACE(setting == nullptr ? "multi-tensor kernels" : "TXL_MULTI_TENSOR=0");
    ScopedEnv env("TXL_MULTI_TENSOR", setting);
    expect_clip_follows_torch(1.0, 0.25, torch::Device(torch::kCUDA, 0), 1e-5);
    expect_clip_follows_torch(1e-4, 0.25, torch::Device(torch::kCUDA, 0), 1e-5);
  }
}

}  // namespace
}  // namespace txl
