// adamw_step against torch::optim::AdamW::step, the update it replaces: the same parameters
// and moments after several steps with changing gradients and learning rate, a parameter
// without a gradient left alone, and a state that torch's own step continues from.
#include "txl/train/adamw_step.h"

#include <gtest/gtest.h>
#include <torch/version.h>

#include "test_util.h"

namespace txl {
namespace {

using testing::max_abs_diff;

std::vector<torch::Tensor> make_parameters(torch::Device device = torch::kCPU) {
  torch::manual_seed(8);
  std::vector<torch::Tensor> params{torch::randn({300, 7}), torch::randn({70001}),
                                    torch::randn({5})};
  for (auto& p : params) p = p.to(device).requires_grad_();
  return params;
}

torch::optim::AdamW make_optimizer(const std::vector<torch::Tensor>& params) {
  return torch::optim::AdamW(
      params, torch::optim::AdamWOptions(3e-3).weight_decay(0.1).betas({0.9, 0.98}).eps(1e-7));
}

// Gradients for step `step`, the same on every device (the last parameter gets none at odd
// steps).
void set_gradients(std::vector<torch::Tensor>& params, int step) {
  torch::manual_seed(100 + step);
  for (size_t i = 0; i < params.size(); ++i) {
    params[i].mutable_grad() = (i == 2 && step % 2 == 1)
                                   ? torch::Tensor()
                                   : torch::randn(params[i].sizes()).to(params[i].device());
  }
}

void set_lr(torch::optim::AdamW& optimizer, double lr) {
  for (auto& group : optimizer.param_groups())
    static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
}

// Six steps of `update` on one copy of the parameters (on `device`) and of torch's step() on
// another (on the CPU), with changing gradients and learning rate; `check` sees the optimizer
// before each update. Then the parameters, moments and step counts of the two agree within
// `tolerance` (the parameter without a gradient at odd steps was stepped 3 times).
template <typename Update, typename Check>
void expect_steps_follow_torch(Update update, Check check, torch::Device device = torch::kCPU,
                               double tolerance = 1e-6) {
  auto ours = make_parameters(device);
  auto theirs = make_parameters();
  auto ours_opt = make_optimizer(ours);
  auto theirs_opt = make_optimizer(theirs);
  for (int step = 0; step < 6; ++step) {
    set_gradients(ours, step);
    set_gradients(theirs, step);
    check(ours_opt);
    set_lr(ours_opt, 3e-3 / (1 + step));
    set_lr(theirs_opt, 3e-3 / (1 + step));
    update(ours_opt);
    theirs_opt.step();
  }
  for (size_t i = 0; i < ours.size(); ++i) {
    EXPECT_LT(max_abs_diff(ours[i].cpu(), theirs[i]), tolerance) << "parameter " << i;
    ASSERT_NE(adamw_state(ours_opt, ours[i]), nullptr);
    ASSERT_NE(adamw_state(theirs_opt, theirs[i]), nullptr);
    const auto& a = *adamw_state(ours_opt, ours[i]);
    const auto& b = *adamw_state(theirs_opt, theirs[i]);
    EXPECT_EQ(a.step(), b.step()) << "parameter " << i;
    EXPECT_LT(max_abs_diff(a.exp_avg().cpu(), b.exp_avg()), tolerance) << "parameter " << i;
    EXPECT_LT(max_abs_diff(a.exp_avg_sq().cpu(), b.exp_avg_sq()), tolerance) << "parameter " << i;
  }
  EXPECT_EQ(adamw_state(ours_opt, ours[2])->step(), 3)
      << "a parameter without a gradient is not stepped";
  // torch's step takes over the state the update left, and the two stay together.
  set_gradients(ours, 6);
  set_gradients(theirs, 6);
  ours_opt.step();
  theirs_opt.step();
  for (size_t i = 0; i < ours.size(); ++i)
    EXPECT_LT(max_abs_diff(ours[i].cpu(), theirs[i]), tolerance)
        << "parameter " << i << " after step()";
}

TEST(AdamWStep, FollowsTorchsAdamWOverSeveralSteps) {
  expect_steps_follow_torch([](torch::optim::AdamW& o) { adamw_step(o); },
                            [](const torch::optim::AdamW& o) {
                              ASSERT_TRUE(adamw_step_is_fused(o))
                                  << "the one-pass update is what is compared";
                            });
}

// LibTorch's fused kernel, as adamw_step runs it on a GPU, run here on the CPU.
TEST(AdamWStep, LibTorchsFusedKernelFollowsTorchsAdamW) {
  if (!adamw_multi_tensor_available()) {
    GTEST_SKIP() << "LibTorch " << TORCH_VERSION << " has no fused AdamW kernel (2.4 and later)";
  }
  expect_steps_follow_torch([](torch::optim::AdamW& o) { adamw_step_multi_tensor(o); },
                            [](const torch::optim::AdamW& o) {
                              EXPECT_FALSE(adamw_step_is_multi_tensor(o))
                                  << "adamw_step keeps its own CPU pass";
                            });
}

// adamw_step on a GPU: LibTorch's fused kernel where it has one (2.4 on), else step(), against
// step() on the CPU; TXL_MULTI_TENSOR=0 hands it to step() there too.
TEST(AdamWOnCuda, FollowsTorchsAdamWOnTheCpu) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device in this LibTorch";
  for (const bool enabled : {true, false}) {
    SCOPED_TRACE(enabled ? "multi-tensor kernels on" : "TXL_MULTI_TENSOR=0");
    testing::ScopedEnv env("TXL_MULTI_TENSOR", enabled ? nullptr : "0");
    expect_steps_follow_torch([](torch::optim::AdamW& o) { adamw_step(o); },
                              [enabled](const torch::optim::AdamW& o) {
                                EXPECT_EQ(adamw_step_is_multi_tensor(o),
                                          enabled && adamw_multi_tensor_available());
                                EXPECT_FALSE(adamw_step_is_fused(o)) << "no CPU pass on a GPU";
                              },
                              torch::Device(torch::kCUDA, 0), 1e-5);
  }
}

TEST(AdamWStep, HandsWhatItDoesNotFuseToTorch) {
  auto params = make_parameters();
  for (auto& p : params) p = p.detach().to(torch::kFloat64).requires_grad_();
  auto reference = make_parameters();
  for (auto& p : reference) p = p.detach().to(torch::kFloat64).requires_grad_();
  auto opt = make_optimizer(params);
  auto ref_opt = make_optimizer(reference);
  set_gradients(params, 0);
  set_gradients(reference, 0);
  for (auto& p : params) p.mutable_grad() = p.grad().to(torch::kFloat64);
  for (auto& p : reference) p.mutable_grad() = p.grad().to(torch::kFloat64);
  EXPECT_FALSE(adamw_step_is_fused(opt));
  adamw_step(opt);
  ref_opt.step();
  for (size_t i = 0; i < params.size(); ++i)
    EXPECT_EQ(max_abs_diff(params[i], reference[i]), 0.0) << "float64 goes to step() itself";
}

}  // namespace
}  // namespace txl
