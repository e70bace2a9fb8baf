#include <string>

#include "cli/commands.h"
#include "cli/torch_commands.h"
#include "cli/version.h"

#ifdef STAGECUT_WITH_TORCH
#include "profiler/cuda_probe.h"
#include "profiler/torch_runtime.h"
#endif

namespace stagecut {

std::string versionText() {
  std::string text = std::string("stagecut ") + STAGECUT_VERSION + " (" + STAGECUT_BUILD_TYPE +
                     " build";
#ifdef STAGECUT_WITH_TORCH
  text += ", LibTorch " + torchRuntimeInfo().torch_version;
  const CudaAvailability cuda = probeCuda();
  text += cuda.built ? ", CUDA timing built, " + std::to_string(cuda.devices) + " device(s)"
                     : ", CUDA timing not built";
#elif defined(STAGECUT_TORCH_PART)
  text += std::string(", without LibTorch; profile, validate and demo run ") + kTorchPartName + ", built against LibTorch " +
          STAGECUT_TORCH_PART_VERSION;
#else
  text += ", without LibTorch";
#endif
  return text + ")";
}

}  // namespace stagecut
