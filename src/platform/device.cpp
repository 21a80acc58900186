#include "txl/platform/device.h"

#include <ATen/Context.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/cuda.h>

#include <algorithm>

#include "txl/config/config.h"
#include "txl/util/env.h"
#include "txl/util/error.h"

namespace txl {

namespace {

const char* const kAllowed = "cpu, cuda, cuda:N (N = 0, 1, ...) or auto";

std::string no_cuda_message(const std::string& name, const std::string& source) {
  if (!cuda_compiled_in())
    return source + " " + name +
           ": this LibTorch was built without CUDA (as Debian's libtorch-dev is); use cpu, or "
           "build txl against a CUDA LibTorch (README, \"GPUs\")";
  return source + " " + name +
         ": this LibTorch has CUDA but sees no GPU (check nvidia-smi, the driver and "
         "CUDA_VISIBLE_DEVICES); use cpu";
}

}  // namespace

torch::Device resolve_device(const std::string& name, const std::string& source) {
  if (!is_device_name(name)) {
    throw InputError(source + " \"" + name + "\" is not a device; expected " + kAllowed);
  }
  if (name == "cpu") return torch::kCPU;
  const bool cuda = torch::cuda::is_available();
  if (name == "auto") return cuda ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
  if (!cuda) throw InputError(no_cuda_message(name, source));
  const int index = std::max(0, device_cuda_index(name));
  const auto count = static_cast<int>(torch::cuda::device_count());
  if (index >= count) {
    throw InputError(source + " " + name + ": this machine has " + std::to_string(count) +
                     " CUDA device(s), cuda:0 to cuda:" + std::to_string(count - 1));
  }
  return {torch::kCUDA, static_cast<c10::DeviceIndex>(index)};
}

bool cuda_compiled_in() {
  // libtorch_cuda registers its hooks under this name when it is loaded (1.13 and 2.x).
  return at::CUDAHooksRegistry()->Has("CUDAHooks");
}

std::string describe_devices() {
  if (!cuda_compiled_in()) return "cpu; CUDA not compiled into this LibTorch";
  if (!torch::cuda::is_available()) return "cpu; CUDA compiled in, but no GPU visible";
  std::string out = "cpu";
  const auto count = torch::cuda::device_count();
  for (size_t i = 0; i < count; ++i) out += (i == 0 ? "; cuda:" : ", cuda:") + std::to_string(i);
  return out;
}

void prepare_device(const torch::Device& device) {
  if (!device.is_cuda()) return;
  const bool tf32 = !env_is("TXL_TF32", "0");
  at::globalContext().setAllowTF32CuBLAS(tf32);
  at::globalContext().setAllowTF32CuDNN(tf32);
}

at::Generator default_generator(const torch::Device& device) {
  return at::globalContext().defaultGenerator(device);
}

void synchronize(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

}  // namespace txl
