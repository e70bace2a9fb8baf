#include "runtime/rank_device.h"

#include <torch/cuda.h>

#include "profiler/cuda_probe.h"
#include "profiler/machine_memory.h"

namespace stagecut {

VisibleGpus visibleGpus() {
  VisibleGpus gpus;
  gpus.count = static_cast<int>(torch::cuda::device_count());
  if (gpus.count > 0) return gpus;
  // A CPU-only LibTorch sees no GPU even where the driver does: say which of the two it is.
  const CudaAvailability cuda = probeCuda();
  gpus.reason = cuda.devices > 0 ? "the driver shows " + std::to_string(cuda.devices) +
                                       " GPU(s), but this stagecut's LibTorch is a CPU-only build"
                                 : cuda.reason;
  return gpus;
}

std::uint64_t deviceMemoryBytes(const std::string& device) {
  if (device == "cpu") return availableMemoryBytes();
  if (device.rfind("cuda:", 0) == 0) return cudaDeviceMemoryBytes(std::stoi(device.substr(5)));
  return 0;
}

void waitForDevice(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

}  // namespace stagecut
