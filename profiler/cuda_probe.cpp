#include "profiler/cuda_probe.h"

#ifdef STAGECUT_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace stagecut {

CudaAvailability probeCuda() {
  CudaAvailability availability;
#ifdef STAGECUT_HAVE_CUDA
  availability.built = true;
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status == cudaSuccess) {
    availability.devices = count;
    if (count == 0) availability.reason = "no CUDA device";
  } else {
    availability.reason = cudaGetErrorString(status);
  }
#else
  availability.reason = "built without CUDA (STAGECUT_CUDA=OFF or no toolkit found)";
#endif
  return availability;
}

std::uint64_t cudaDeviceMemoryBytes(int ordinal) {
#ifdef STAGECUT_HAVE_CUDA
  cudaDeviceProp properties{};
  if (cudaGetDeviceProperties(&properties, ordinal) == cudaSuccess) {
    return static_cast<std::uint64_t>(properties.totalGlobalMem);
  }
#else
  (void)ordinal;
#endif
  return 0;
}

}  // namespace stagecut
