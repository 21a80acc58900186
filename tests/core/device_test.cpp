// Devices: names resolved on this machine (platform/device.h), every command's --device and
// train.device refusing what this LibTorch cannot run on (exit code 2, nothing written), and,
// where this LibTorch has CUDA and sees a GPU, the model and a short training run on the GPU
// against the same on the CPU. Without CUDA those GPU tests skip and say so; the CPU path and
// the refusals are tested everywhere.
#include "txl/platform/device.h"

#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <cmath>
#include <string>
#include <vector>

#include "cli_harness.h"
#include "test_util.h"
#include "txl/config/config.h"
#include "txl/config/encodings.h"
#include "txl/model/transformer.h"
#include "txl/platform/runtime.h"
#include "txl/util/error.h"

namespace txl {
namespace {

bool has_cuda() { return torch::cuda::is_available(); }

// The InputError message resolve_device(name, source) throws ("" when it resolves).
std::string refusal(const std::string& name, const std::string& source = "--device") {
  try {
    resolve_device(name, source);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(DeviceNames, FormsAreCheckedWithoutLookingAtTheMachine) {
  for (const std::string ok : {"cpu", "cuda", "cuda:0", "cuda:7", "cuda:1234", "auto"}) {
    EXPECT_TRUE(is_device_name(ok)) << ok;
  }
  for (const std::string bad :
       {"", "CPU", "gpu", "cuda:", "cuda:-1", "cuda:x", "cuda:1a", "cuda:12345", " cuda", "mps"}) {
    EXPECT_FALSE(is_device_name(bad)) << bad;
  }
  EXPECT_EQ(device_cuda_index("cuda"), -1);
  EXPECT_EQ(device_cuda_index("cuda:3"), 3);
  EXPECT_EQ(device_cuda_index("cpu"), -2);
}

TEST(ResolveDevice, CpuAndAutoResolveAndMalformedNamesAreRefusedByName) {
  EXPECT_EQ(resolve_device("cpu", "--device"), torch::Device(torch::kCPU));
  const torch::Device automatic = resolve_device("auto", "--device");
  EXPECT_EQ(automatic, has_cuda() ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU));
  const std::string why = refusal("gpu", "train.device");
  EXPECT_NE(why.find("train.device"), std::string::npos) << why;
  EXPECT_NE(why.find("\"gpu\""), std::string::npos) << why;
  EXPECT_NE(why.find("cuda:N"), std::string::npos) << why;
}

TEST(ResolveDevice, CudaIsRefusedWithTheReasonWhereThereIsNone) {
  if (has_cuda()) {
    // A GPU machine: the index must exist.
    const std::string why = refusal("cuda:999");
    EXPECT_NE(why.find("CUDA device(s)"), std::string::npos) << why;
    EXPECT_EQ(resolve_device("cuda", "--device"), torch::Device(torch::kCUDA, 0));
    return;
  }
  // Debian's libtorch-dev has no CUDA; a CUDA LibTorch on a machine without a GPU (the CUDA
  // build check) has it but sees none: the refusal names the one that holds.
  const bool compiled = cuda_compiled_in();
  for (const std::string name : {"cuda", "cuda:0", "cuda:3"}) {
    const std::string why = refusal(name);
    EXPECT_NE(why.find("--device " + name), std::string::npos) << why;
    EXPECT_NE(why.find(compiled ? "sees no GPU" : "built without CUDA"), std::string::npos) << why;
    if (!compiled) EXPECT_NE(why.find("README"), std::string::npos) << why;
  }
  EXPECT_EQ(describe_devices(), compiled ? "cpu; CUDA compiled in, but no GPU visible"
                                         : "cpu; CUDA not compiled into this LibTorch");
}

TEST(DeviceConfig, TrainDeviceDefaultsToCpuAndIsValidatedByName) {
  nlohmann::json j = {{"data", {{"dir", "corpus"}}}};
  EXPECT_EQ(config_from_json(j, "c.json").train.device, "cpu");
  EXPECT_EQ(config_to_json(config_from_json(j, "c.json"))["train"]["device"], "cpu");
  j["train"]["device"] = "cuda:1";
  EXPECT_EQ(config_from_json(j, "c.json").train.device, "cuda:1");  // the machine is not asked
  j["train"]["device"] = "tpu";
  testing::expect_input_error([&] { config_from_json(j, "c.json"); }, {"train.device (\"tpu\")"});
}

// --- through the CLI -------------------------------------------------------------------

TEST(DeviceCli, EveryCommandRefusesADeviceItCannotUseWithExitCode2) {
  const auto dir = testing::scratch_dir("device_cli");
  const auto corpus =
      testing::write_corpus(dir + "/corpus", testing::tiny_english(120),
                            testing::tiny_english(20, 1), testing::tiny_english(20, 2));
  const auto run = dir + "/rel";
  ASSERT_TRUE(testing::train_tiny_run(corpus, run, "relative", "char", 2, {"--device", "cpu"}));
  const auto config = run + ".config.json";
  std::vector<std::string> names = {"gpu"};
  if (!has_cuda()) names.push_back("cuda");
  for (const auto& name : names) {
    const std::vector<std::vector<std::string>> commands = {
        {"train", "--config", config, "--run-dir", dir + "/new", "--device", name},
        {"train", "--config", config, "--run-dir", dir + "/new", "--set", "train.device=" + name},
        {"eval", "--run", run, "--device", name},
        {"compare", run, run, "--device", name},
        {"sample", "--run", run, "--tokens", "3", "--device", name},
        {"bench", "--config", config, "--steps", "1", "--warmup", "0", "--long-length", "0",
         "--device", name},
    };
    for (const auto& args : commands) {
      const auto r = testing::run_txl(args);
      EXPECT_EQ(r.code, 2) << args[0] << " " << name << ":\n" << r.output;
      EXPECT_NE(r.err.find(name), std::string::npos) << r.err;
      EXPECT_NE(r.err.find(name == "gpu" ? "is not a device" : "without CUDA"), std::string::npos)
          << r.err;
      EXPECT_FALSE(testing::cli_fs::exists(dir + "/new")) << "a refused train wrote its run";
    }
  }
  testing::cleanup_scratch();
}

TEST(DeviceCli, AutoIsTheCpuWithoutAGpuAndGivesTheCpusNumbers) {
  if (has_cuda()) GTEST_SKIP() << "auto is cuda:0 here; ModelOnCuda compares the two devices";
  const auto dir = testing::scratch_dir("device_auto");
  const auto corpus =
      testing::write_corpus(dir + "/corpus", testing::tiny_english(120),
                            testing::tiny_english(20, 1), testing::tiny_english(20, 2));
  const auto run = dir + "/rel";
  ASSERT_TRUE(testing::train_tiny_run(corpus, run, "relative", "char", 2));
  const auto cpu = testing::run_txl({"eval", "--run", run, "--no-cache", "--json", dir + "/c"});
  const auto automatic = testing::run_txl(
      {"eval", "--run", run, "--no-cache", "--device", "auto", "--json", dir + "/a"});
  ASSERT_EQ(cpu.code, 0) << cpu.output;
  ASSERT_EQ(automatic.code, 0) << automatic.output;
  const auto a = nlohmann::json::parse(testing::read_text(dir + "/a"));
  const auto c = nlohmann::json::parse(testing::read_text(dir + "/c"));
  ASSERT_EQ(a["results"].size(), c["results"].size());
  for (size_t i = 0; i < a["results"].size(); ++i) {
    EXPECT_EQ(a["results"][i]["nll"], c["results"][i]["nll"]) << i;
  }
  // train.device may change on resume (as train.threads may).
  const auto resumed = testing::run_txl(
      {"train", "--resume", run, "--set", "train.max_steps=3", "--device", "auto"});
  EXPECT_EQ(resumed.code, 0) << resumed.output;
  testing::cleanup_scratch();
}

// --- on a GPU ---------------------------------------------------------------------------

class ModelOnCuda : public ::testing::TestWithParam<PosEncoding> {};

// The same weights, tokens and memory give the same losses, memory and gradients on the GPU
// as on the CPU (to float32 rounding of different kernels), in fp32 and under bf16 autocast.
TEST_P(ModelOnCuda, LossMemoryAndGradientsMatchTheCpu) {
  if (!has_cuda()) GTEST_SKIP() << "no CUDA device in this LibTorch (" << describe_devices() << ")";
  const torch::Device gpu(torch::kCUDA, 0);
  torch::manual_seed(5);
  const auto config = testing::tiny_model(GetParam());
  TransformerLM cpu_model(config, 50);
  TransformerLM gpu_model(config, 50);
  {
    torch::NoGradGuard no_grad;
    auto from = cpu_model->parameters();
    auto to = gpu_model->parameters();
    for (size_t i = 0; i < from.size(); ++i) to[i].copy_(from[i]);
  }
  gpu_model->to(gpu);
  const bool memory = cpu_model->has_memory();
  const auto tokens = torch::randint(50, {2, 12}, torch::kLong);
  const auto targets = torch::randint(50, {2, 12}, torch::kLong);
  for (const Precision precision : {Precision::kFp32, Precision::kBf16}) {
    auto run = [&](TransformerLM& model, const torch::Device& device) {
      model->zero_grad();
      ForwardOptions o;
      o.targets = targets.to(device);
      o.keep_memory = memory ? 6 : 0;
      AutocastGuard autocast(precision, device);
      auto first = model->forward(tokens.to(device), {}, o);
      auto second = model->forward(tokens.to(device), first.memory, o);
      second.nll.mean().backward();
      std::vector<torch::Tensor> grads;
      for (const auto& p : model->parameters())
        if (p.grad().defined()) grads.push_back(p.grad().reshape({-1}).cpu());
      return std::make_tuple(second.nll.detach().cpu(),
                             memory
                                 ? second.memory.layers[0].detach().to(torch::kCPU, torch::kFloat32)
                                 : torch::zeros({1}),
                             torch::cat(grads));
    };
    const auto [nll_c, mem_c, grad_c] = run(cpu_model, torch::kCPU);
    const auto [nll_g, mem_g, grad_g] = run(gpu_model, gpu);
    const double tol = precision == Precision::kFp32 ? 1e-4 : 3e-2;
    EXPECT_TRUE(torch::allclose(nll_g, nll_c, tol, tol)) << to_string(precision);
    EXPECT_TRUE(torch::allclose(mem_g, mem_c, tol, tol)) << to_string(precision);
    EXPECT_LT((grad_g - grad_c).norm().item<double>(), tol * 10 * grad_c.norm().item<double>())
        << to_string(precision);
  }
}

INSTANTIATE_TEST_SUITE_P(EveryEncoding, ModelOnCuda, ::testing::ValuesIn(testing::all_encodings()),
                         [](const auto& info) { return to_string(info.param); });

// A short run on the GPU follows the CPU's losses (dropout off; float32 products in float32,
// TXL_TF32=0), its checkpoint evaluates to the same perplexity on either device, and it
// resumes on the GPU. The two runs agree within 0.2% for the first 4 steps, as one step's
// losses and gradients do (ModelOnCuda); after that AdamW's early steps, which move a
// parameter by about lr whatever the size of its gradient, turn rounding differences into
// drift: on an H200 0.25% at step 5 and 1.07% at step 12, the same with TF32 and without.
// So later steps are held to 3%.
TEST(TrainOnCuda, FollowsTheCpuRunAndItsCheckpointLoadsOnEitherDevice) {
  if (!has_cuda()) GTEST_SKIP() << "no CUDA device in this LibTorch (" << describe_devices() << ")";
  const auto dir = testing::scratch_dir("train_cuda");
  const auto corpus =
      testing::write_corpus(dir + "/corpus", testing::tiny_english(200),
                            testing::tiny_english(20, 1), testing::tiny_english(20, 2));
  ASSERT_TRUE(testing::train_tiny_run(corpus, dir + "/cpu", "relative", "char", 12));
  const std::vector<std::string> fp32 = {"TXL_TF32=0"};
  ASSERT_TRUE(testing::train_tiny_run(corpus, dir + "/gpu", "relative", "char", 12,
                                      {"--device", "cuda", "--set", "train.max_steps=8"}, fp32));
  const auto resumed = testing::run_txl(
      {"train", "--resume", dir + "/gpu", "--set", "train.max_steps=12", "--device", "cuda"}, fp32);
  ASSERT_EQ(resumed.code, 0) << resumed.output;
  const auto cpu_losses = testing::read_losses(dir + "/cpu");
  const auto gpu_losses = testing::read_losses(dir + "/gpu");
  ASSERT_EQ(cpu_losses.size(), gpu_losses.size());
  for (const auto& [step, loss] : cpu_losses) {
    const double tolerance = step <= 4 ? 2e-3 : 3e-2;
    EXPECT_NEAR(gpu_losses.at(step), loss, tolerance * std::abs(loss)) << "step " << step;
  }
  std::vector<double> nll;
  for (const std::string device : {"cpu", "cuda"}) {
    const auto json = dir + "/eval_" + device + ".json";
    const auto r = testing::run_txl(
        {"eval", "--run", dir + "/gpu", "--no-cache", "--device", device, "--json", json}, fp32);
    ASSERT_EQ(r.code, 0) << r.output;
    nll.push_back(nlohmann::json::parse(testing::read_text(json))["results"][0]["nll"]);
  }
  EXPECT_NEAR(nll[0], nll[1], 1e-4 * std::abs(nll[0]));
  testing::cleanup_scratch();
}

}  // namespace
}  // namespace txl
