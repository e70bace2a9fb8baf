#include <fstream>

#include <torch/cuda.h>

#include "core/error.h"
#include "profiler/cuda_probe.h"
#include "profiler/layer_profiler.h"
#include "profiler/profile_request.h"
#include "profiler/torch_runtime.h"
#include "profiler/torchscript_chain.h"

namespace stagecut {

namespace {

std::string cpuModelName() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  }
  return "";
}

// Debian's LibTorch is CPU-only, so a CUDA profile needs another LibTorch; say which and why.
void requireCudaDevice(const std::string& device) {
  const CudaAvailability cuda = probeCuda();
  std::string reason;
  if (!torch::cuda::is_available()) {
    reason = "this stagecut is linked against a CPU-only LibTorch";
    if (cuda.devices == 0) reason += " and this machine has no usable GPU (" + cuda.reason + ")";
    throw Error("--device " + device + ": " + reason +
                "; on a GPU machine, build against a CUDA LibTorch (cmake -DCMAKE_PREFIX_PATH=/path/to/"
                "libtorch) with -DSTAGECUT_CUDA=ON, or profile with --device cpu");
  }
}

void checkTimer(const ProfileRequest& request) {
  const bool cuda = request.device.rfind("cuda", 0) == 0;
  if (request.device != "cpu" && !cuda) {
    throw Error("--device " + request.device + ": unknown device; use cpu, cuda or cuda:K");
  }
  if (!cuda && request.timer != "steady_clock") {
    throw Error("--timer " + request.timer + ": only steady_clock times CPU work; cuda-events and "
                "cupti need --device cuda");
  }
  if (cuda) requireCudaDevice(request.device);
}

void checkMeasureOptions(const MeasureOptions& options) {
  if (options.microbatch_size < 1) {
    throw Error("--microbatch " + std::to_string(options.microbatch_size) + ": must be 1 or more");
  }
  if (options.min_repeats < 1 || options.max_repeats < options.min_repeats) {
    throw Error("--min-repeats " + std::to_string(options.min_repeats) + " --max-repeats " +
                std::to_string(options.max_repeats) + ": need 1 <= min <= max");
  }
  if (options.warmup_rounds < 0) throw Error("--warmup must be 0 or more");
  if (!(options.cv_target > 0)) throw Error("--cv-target must be more than 0, e.g. 0.03");
}

}  // namespace

Profile runProfile(const ProfileRequest& request) {
  checkTimer(request);
  checkMeasureOptions(request.measure);
  pinThreads(request.threads);

  LayerChain chain;
  if (!request.torchscript_path.empty()) {
    if (request.input_spec.empty()) {
      throw Error("--torchscript " + request.torchscript_path +
                  ": needs --input, e.g. --input 8x3x224x224:float32");
    }
    const InputSpec input = parseInputSpec(request.input_spec);
    chain = loadTorchScriptChain(request.torchscript_path, input, request.measure.seed);
  } else {
    chain = buildZooModel(request.zoo);
  }

  MeasureOptions measure = request.measure;
  if (!request.torchscript_path.empty()) {
    measure.microbatch_size = static_cast<int>(parseInputSpec(request.input_spec).shape[0]);
  }
  SteadyClockTimer timer;
  Profile profile = measureLayerChain(chain, measure, timer);

  const TorchRuntimeInfo runtime = torchRuntimeInfo();
  profile.device.kind = "cpu";
  profile.device.name = cpuModelName();
  profile.device.threads = runtime.intraop_threads;
  profile.device.torch = runtime.torch_version;
  profile.device.extra = {{"interop_threads", runtime.interop_threads},
                          {"blas", runtime.blas},
                          {"blas_threads", runtime.blas_threads}};
  return profile;
}

}  // namespace stagecut
