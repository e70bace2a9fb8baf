#include "runtime/rank_device.h"

#include <torch/cuda.h>

#include "profiler/cuda_probe.h"

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

void waitForDevice(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

}  // namespace stagecut
