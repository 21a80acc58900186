#include "txl/train/adamw_step.h"

#include <cmath>
#include <map>
#include <optional>
#include <vector>

#include "txl/platform/multi_tensor.h"
#include "txl/platform/parallel.h"
#include "txl/platform/torch_compat.h"

namespace txl {

namespace {

// The state of p, created as step() creates it (zero moments) when missing.
template <typename Map>
torch::optim::AdamWParamState& state_of(Map& states, const torch::Tensor& p) {
  const auto key = optimizer_state_key(states, p);
  auto found = states.find(key);
  if (found == states.end()) {
    auto state = std::make_unique<torch::optim::AdamWParamState>();
    state->step(0);
    state->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
    state->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
    found = states.emplace(key, std::move(state)).first;
  }
  return static_cast<torch::optim::AdamWParamState&>(*found->second);
}

// The step's scalars for one parameter, in the order step() applies them.
struct AdamWScalars {
  float decay;  // 1 - lr * weight_decay
  float beta1, one_minus_beta1, beta2, one_minus_beta2;
  float sqrt_bc2;  // sqrt(1 - beta2^step)
  float eps;
  float step_size;  // lr / (1 - beta1^step)
};

// p = p * decay; m = m * b1 + g * (1 - b1); v = v * b2 + (1 - b2) * g * g;
// p = p - step_size * m / (sqrt(v) / sqrt_bc2 + eps)
void update(float* p, const float* g, float* m, float* v, int64_t n, const AdamWScalars& s) {
  parallel_chunks(n, 1 << 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const float gi = g[i];
      const float pi = p[i] * s.decay;
      const float mi = m[i] * s.beta1 + gi * s.one_minus_beta1;
      const float vi = v[i] * s.beta2 + s.one_minus_beta2 * gi * gi;
      const float denom = std::sqrt(vi) / s.sqrt_bc2 + s.eps;
      m[i] = mi;
      v[i] = vi;
      p[i] = pi - s.step_size * (mi / denom);
    }
  });
}

// Where the parameters take one of the single-pass updates: no amsgrad, and every parameter
// with a gradient a contiguous float32 tensor with a dense float32 gradient, all on one device.
struct PlainParameters {
  bool plain = true;
  std::optional<torch::Device> device;  // none: no parameter has a gradient
};

PlainParameters plain_parameters(const torch::optim::AdamW& optimizer) {
  PlainParameters found;
  for (const auto& group : optimizer.param_groups()) {
    if (static_cast<const torch::optim::AdamWOptions&>(group.options()).amsgrad())
      return {false, std::nullopt};
    for (const auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      if (p.scalar_type() != torch::kFloat32 || !p.is_contiguous() ||
          p.grad().scalar_type() != torch::kFloat32 || p.grad().is_sparse() ||
          (found.device && *found.device != p.device()))
        return {false, std::nullopt};
      found.device = p.device();
    }
  }
  return found;
}

}  // namespace

bool adamw_step_is_fused(const torch::optim::AdamW& optimizer) {
  const PlainParameters found = plain_parameters(optimizer);
  return found.plain && (!found.device || found.device->is_cpu());
}

const torch::optim::AdamWParamState* adamw_state(torch::optim::AdamW& optimizer,
                                                 const torch::Tensor& p) {
  auto& states = optimizer.state();
  const auto found = states.find(optimizer_state_key(states, p));
  if (found == states.end()) return nullptr;
  return static_cast<const torch::optim::AdamWParamState*>(found->second.get());
}

bool adamw_multi_tensor_available() { return TXL_TORCH_AT_LEAST(2, 4); }

bool adamw_step_is_multi_tensor(const torch::optim::AdamW& optimizer) {
  if (!adamw_multi_tensor_available() || !multi_tensor_enabled()) return false;
  const PlainParameters found = plain_parameters(optimizer);
  return found.plain && found.device && found.device->is_cuda();
}

void adamw_step_multi_tensor(torch::optim::AdamW& optimizer) {
#if TXL_TORCH_AT_LEAST(2, 4)
  torch::NoGradGuard no_grad;
  for (auto& group : optimizer.param_groups()) {
    const auto& o = static_cast<const torch::optim::AdamWOptions&>(group.options());
    TORCH_CHECK(!o.amsgrad(), "adamw_step_multi_tensor takes no amsgrad");
    // The kernel takes one step count per parameter; parameters that missed steps (no
    // gradient) have another count, so each count is a call of its own.
    struct Lists {
      std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs;
    };
    std::map<int64_t, Lists> by_step;
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto& state = state_of(optimizer.state(), p);
      state.step(state.step() + 1);
      auto& lists = by_step[state.step()];
      lists.params.push_back(p);
      lists.grads.push_back(p.grad().contiguous());
      lists.exp_avgs.push_back(state.exp_avg());
      lists.exp_avg_sqs.push_back(state.exp_avg_sq());
    }
    for (auto& [step, lists] : by_step) {
      const auto count = torch::full({}, static_cast<double>(step),
                                     torch::TensorOptions().device(lists.params.front().device()));
      const std::vector<torch::Tensor> steps(lists.params.size(), count);
      at::_fused_adamw_(lists.params, lists.grads, lists.exp_avgs, lists.exp_avg_sqs, {}, steps,
                        o.lr(), std::get<0>(o.betas()), std::get<1>(o.betas()), o.weight_decay(),
                        o.eps(), /*amsgrad=*/false, /*maximize=*/false);
    }
  }
#else
  (void)optimizer;
  TORCH_CHECK(false, "LibTorch's fused AdamW kernel needs LibTorch 2.4 or later");
#endif
}

void adamw_step(torch::optim::AdamW& optimizer) {
  if (adamw_step_is_multi_tensor(optimizer)) {
    adamw_step_multi_tensor(optimizer);
    return;
  }
  if (!adamw_step_is_fused(optimizer)) {
    optimizer.step();
    return;
  }
  torch::NoGradGuard no_grad;
  for (auto& group : optimizer.param_groups()) {
    const auto& o = static_cast<const torch::optim::AdamWOptions&>(group.options());
    const double beta1 = std::get<0>(o.betas()), beta2 = std::get<1>(o.betas());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto& state = state_of(optimizer.state(), p);
      // What step() would refuse through its tensor operations, refused before any change.
      TORCH_CHECK(state.exp_avg().numel() == p.numel() && state.exp_avg_sq().numel() == p.numel(),
                  "AdamW state of a parameter of ", p.numel(), " elements holds ",
                  state.exp_avg().numel(), " and ", state.exp_avg_sq().numel());
      TORCH_CHECK(state.exp_avg().is_contiguous() && state.exp_avg_sq().is_contiguous(),
                  "AdamW moments of a contiguous parameter must be contiguous");
      state.step(state.step() + 1);
      const auto step = static_cast<double>(state.step());
      const AdamWScalars s{static_cast<float>(1.0 - o.lr() * o.weight_decay()),
                           static_cast<float>(beta1),
                           static_cast<float>(1.0 - beta1),
                           static_cast<float>(beta2),
                           static_cast<float>(1.0 - beta2),
                           static_cast<float>(std::sqrt(1.0 - std::pow(beta2, step))),
                           static_cast<float>(o.eps()),
                           static_cast<float>(o.lr() / (1.0 - std::pow(beta1, step)))};
      const auto g = p.grad().contiguous();
      update(p.data_ptr<float>(), g.data_ptr<float>(), state.exp_avg().data_ptr<float>(),
             state.exp_avg_sq().data_ptr<float>(), p.numel(), s);
      // As step()'s in-place operations do: autograd then refuses graphs that saved the old
      // values.
      torch::autograd::impl::bump_version(p);
      torch::autograd::impl::bump_version(state.exp_avg());
      torch::autograd::impl::bump_version(state.exp_avg_sq());
    }
  }
}

}  // namespace txl
