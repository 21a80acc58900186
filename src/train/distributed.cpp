#include "txl/train/distributed.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <mutex>
#include <stdexcept>
// Gloo's headers come with Debian's LibTorch (libgloo-dev), not with PyTorch's wheels; a
// build without them (CMakeLists.txt decides) trains in one process only.
#if TXL_HAS_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
using GlooGroup = c10d::ProcessGroupGloo;
#else
#include <torch/csrc/distributed/c10d/Backend.hpp>
using GlooGroup = c10d::Backend;  // never made: Distributed refuses several ranks first
#endif

#include "txl/platform/tcp_store.h"
#include "txl/platform/torch_error.h"
#include "txl/platform/watchdog.h"
#include "txl/util/env.h"
#include "txl/util/error.h"

namespace txl {

namespace {

bool is_loopback(const std::string& addr) {
  return addr == "localhost" || addr.rfind("127.", 0) == 0 || addr == "::1";
}

}  // namespace

DistributedEnv distributed_env_from_environment() {
  // A variable of a distributed launch given without its partner is a mistake, not a
  // world of one: RANK alone would train alone (and write the run as rank 0 would), and
  // WORLD_SIZE alone would make every process rank 0.
  const bool has_rank = env_set("RANK"), has_world = env_set("WORLD_SIZE");
  if (has_rank && !has_world) {
    throw InputError("RANK=" + std::to_string(*env_int("RANK")) +
                     " without WORLD_SIZE: every process of a distributed run needs WORLD_SIZE "
                     "(the number of processes; RANK is 0 to WORLD_SIZE - 1) and MASTER_ADDR / "
                     "MASTER_PORT naming rank 0. Unset RANK to train as one process");
  }
  DistributedEnv env;
  env.world_size = static_cast<int>(env_int("WORLD_SIZE").value_or(1));
  if (env.world_size > 1 && !has_rank) {
    throw InputError("WORLD_SIZE=" + std::to_string(env.world_size) +
                     " without RANK: every process of a distributed run needs RANK (0 to "
                     "WORLD_SIZE - 1), and MASTER_ADDR / MASTER_PORT naming rank 0");
  }
  env.rank = static_cast<int>(env_int("RANK", 0, env.world_size - 1).value_or(0));
  env.local_rank = static_cast<int>(env_int("LOCAL_RANK").value_or(env.rank));
  env.local_world_size = static_cast<int>(env_int("LOCAL_WORLD_SIZE").value_or(1));
  env.master_port = static_cast<int>(env_int("MASTER_PORT").value_or(29500));
  env.timeout = std::chrono::seconds(env_int("TXL_DIST_TIMEOUT_S").value_or(600));
  if (const auto addr = env_text("MASTER_ADDR")) env.master_addr = *addr;
  return env;
}

namespace {

// How long past TXL_DIST_TIMEOUT_S the watchdog waits before it ends the process: long
// enough that LibTorch's own timeout, whose message says more, normally fires first.
std::chrono::milliseconds watchdog_limit(std::chrono::milliseconds timeout) {
  const auto grace =
      std::clamp(timeout / 10, std::chrono::milliseconds(1000), std::chrono::milliseconds(60000));
  return timeout + grace;
}

}  // namespace

struct Distributed::Group {
  // Every wait on the other ranks is bounded twice: by LibTorch's timeout, and by this
  // watchdog for the waits LibTorch cannot bound (a store client reading from a peer that
  // accepted the connection and never answers waits forever in LibTorch 1.13).
  Watchdog watchdog;
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<GlooGroup> pg;
  std::chrono::milliseconds timeout;
  int rank = 0;

  // Runs a collective and waits for it, turning a failure (a peer gone, a timeout) into one
  // message.
  template <typename Start>
  void run(const char* what, Start start) {
    const WatchdogScope guard(
        watchdog, watchdog_limit(timeout),
        fmt::format("distributed {} on rank {} did not finish within {} s (TXL_DIST_TIMEOUT_S): "
                    "another rank stopped, died or hangs",
                    what, rank, timeout.count() / 1000));
    try {
      start()->wait(timeout);
    } catch (const std::exception& e) {
      throw std::runtime_error(fmt::format(
          "distributed {} failed on rank {} (another rank stopped, died or did not answer "
          "within {} s): {}",
          what, rank, timeout.count() / 1000, error_text(e)));
    }
  }
};

bool gloo_built() { return TXL_HAS_GLOO != 0; }

std::string gloo_missing_reason() {
  return "data-parallel training needs Gloo, and this txl was built without it (its LibTorch "
         "came without Gloo's headers, as PyTorch's wheels do; Debian's libtorch-dev has them): "
         "train with one process";
}

namespace {

#if TXL_HAS_GLOO
c10::intrusive_ptr<c10d::ProcessGroupGloo::Options> gloo_options(
    const DistributedEnv& env, std::chrono::milliseconds timeout) {
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  if (const auto ifname = env_text("GLOO_SOCKET_IFNAME")) {
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(*ifname));
  } else if (is_loopback(env.master_addr)) {
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  } else {
    options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  }
  options->threads = 1;
  return options;
}
#endif

}  // namespace

Distributed::Distributed(const DistributedEnv& env) : env_(env) {
  if (env.world_size <= 1) return;
#if !TXL_HAS_GLOO
  // Before the rendezvous: rank 0 would otherwise serve a store and wait for the others.
  throw InputError(gloo_missing_reason());
#endif
  group_ = std::make_unique<Group>();
  group_->timeout = std::chrono::duration_cast<std::chrono::milliseconds>(env.timeout);
  group_->rank = env.rank;
  const auto started = std::chrono::steady_clock::now();
  const WatchdogScope guard(
      group_->watchdog, watchdog_limit(group_->timeout),
      fmt::format("rank {} of {} could not join the others at {}:{}: no answer within {} s "
                  "(TXL_DIST_TIMEOUT_S); is MASTER_ADDR:MASTER_PORT rank 0 of this run, and "
                  "is rank 0 running?",
                  env.rank, env.world_size, env.master_addr, env.master_port, env.timeout.count()));
  try {
    TcpStoreSettings store;
    store.host = env.master_addr;
    store.port = static_cast<std::uint16_t>(env.master_port);
    store.is_server = env.rank == 0;
    store.workers = static_cast<size_t>(env.world_size);
    store.timeout = group_->timeout;
    group_->store = make_tcp_store(store);
#if TXL_HAS_GLOO
    group_->pg = c10::make_intrusive<c10d::ProcessGroupGloo>(
        group_->store, env.rank, env.world_size, gloo_options(env, group_->timeout));
#endif
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format(
        "rank {} of {} could not join the others at {}:{} (gave up after {:.1f} s; the "
        "limit, TXL_DIST_TIMEOUT_S, is {} s): {}",
        env.rank, env.world_size, env.master_addr, env.master_port,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(),
        env.timeout.count(), error_text(e)));
  }
}

Distributed::~Distributed() {
  if (!group_) return;
  // Closing the connections waits for work in flight; bounded like every other wait.
  const WatchdogScope guard(
      group_->watchdog, watchdog_limit(group_->timeout),
      fmt::format("rank {} could not close its connections to the other ranks within {} s "
                  "(TXL_DIST_TIMEOUT_S)",
                  env_.rank, env_.timeout.count()));
  group_->pg.reset();
  group_->store.reset();
}

void Distributed::average_gradients(const std::vector<torch::Tensor>& parameters) {
  if (!active()) return;
  std::vector<torch::Tensor> grads;
  for (const auto& p : parameters) {
    if (p.grad().defined()) grads.push_back(p.grad());
  }
  if (grads.empty()) return;
  std::vector<torch::Tensor> flat_views;
  for (const auto& g : grads) flat_views.push_back(g.reshape({-1}));
  std::vector<torch::Tensor> flat = {torch::cat(flat_views)};  // [sum of numel]
  group_->run("all-reduce of the gradients", [&] { return group_->pg->allreduce(flat); });
  flat[0].div_(env_.world_size);
  int64_t at = 0;
  for (auto& g : grads) {
    const int64_t n = g.numel();
    g.copy_(flat[0].narrow(0, at, n).view(g.sizes()));
    at += n;
  }
}

double Distributed::sum(double value) {
  if (!active()) return value;
  std::vector<torch::Tensor> t = {torch::full({1}, value, torch::kFloat64)};
  group_->run("all-reduce", [&] { return group_->pg->allreduce(t); });
  return t[0].item<double>();
}

int64_t Distributed::max(int64_t value) {
  if (!active()) return value;
  std::vector<torch::Tensor> t = {torch::full({1}, value, torch::kInt64)};
  c10d::AllreduceOptions options;
  options.reduceOp = c10d::ReduceOp::MAX;
  group_->run("all-reduce", [&] { return group_->pg->allreduce(t, options); });
  return t[0].item<int64_t>();
}

torch::Tensor Distributed::gather_rows(const torch::Tensor& local) {
  if (!active()) return local;
  const torch::Tensor input = local.contiguous();
  std::vector<std::vector<torch::Tensor>> out(1);
  for (int r = 0; r < env_.world_size; ++r) out[0].push_back(torch::empty_like(input));
  std::vector<torch::Tensor> in = {input};
  group_->run("all-gather", [&] { return group_->pg->allgather(out, in); });
  return torch::cat(out[0], 0);
}

void Distributed::barrier() {
  if (!active()) return;
  group_->run("barrier", [&] { return group_->pg->barrier(); });
}

Distributed& single_process() {
  static Distributed alone{DistributedEnv{}};
  return alone;
}

torch::Tensor local_rows(const Distributed& dist, const torch::Tensor& global) {
  if (!dist.active()) return global;
  const int64_t rows = global.size(0) / dist.world_size();
  return global.narrow(0, rows * dist.rank(), rows);
}

Memory gather_memory(Distributed& dist, const Memory& local) {
  if (!dist.active() || local.empty()) return local;
  Memory all;
  for (const auto& layer : local.layers) all.layers.push_back(dist.gather_rows(layer));
  return all;
}

void seed_dropout(const Distributed& dist, at::Generator& generator, int64_t seed, int64_t step) {
  if (!dist.active()) return;
  uint64_t h = static_cast<uint64_t>(seed) * 0x9E3779B97F4A7C15ull;
  h ^= static_cast<uint64_t>(step) * 0xC2B2AE3D27D4EB4Full + static_cast<uint64_t>(dist.rank());
  h ^= h >> 31;
  std::lock_guard<std::mutex> lock(generator.mutex());
  generator.set_current_seed(h);
}

}  // namespace txl
