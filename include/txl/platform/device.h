// Where the model and its tensors live: the CPU (default) or a CUDA GPU.
//
// Names, as train.device, --device and `txl info` use them:
//   cpu      the CPU (every LibTorch has it)
//   cuda     the first CUDA device, cuda:0
//   cuda:N   CUDA device N (0-based, as nvidia-smi numbers them)
//   auto     cuda:0 when this LibTorch has CUDA and sees a GPU, the CPU otherwise
// Debian's libtorch-dev is built without CUDA: there, cuda and cuda:N are an InputError
// (exit code 2) that says so and how to get a CUDA build (README, "GPUs").
#pragma once

#include <torch/torch.h>

#include <string>

namespace txl {

// is_device_name (config.h) checks the forms without looking at the machine.
// The device `name` stands for on this machine. InputError naming `source` (a key path such
// as train.device, or an option such as --device), the value and what is allowed, when the
// name is malformed, this LibTorch has no CUDA, or device N does not exist.
torch::Device resolve_device(const std::string& name, const std::string& source);

// What txl can run on here, for `txl info`: e.g. "cpu; cuda:0, cuda:1" or
// "cpu; CUDA not compiled into this LibTorch".
std::string describe_devices();

// Whether the LibTorch txl runs on has CUDA (libtorch_cuda loaded), GPU or not.
bool cuda_compiled_in();

// Once per process, before the first model runs on `device`: on CUDA, TF32 for float32
// matrix products and convolutions (GPUs without TF32 units ignore it), as NVIDIA's
// Transformer-XL trains, unless the environment sets TXL_TF32=0 (float32 products in float32,
// to compare with a CPU run); nothing on the CPU.
void prepare_device(const torch::Device& device);

// The generator dropout draws from on `device` (LibTorch's default one for that device):
// the trainer saves and restores its state so a resumed run continues the same draws.
at::Generator default_generator(const torch::Device& device);

// Waits until the device has finished the work queued so far (a no-op on the CPU), so a
// clock read after it measures the work, not its launch.
void synchronize(const torch::Device& device);

}  // namespace txl
