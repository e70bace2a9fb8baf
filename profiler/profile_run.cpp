#include <algorithm>
#include <fstream>

#include <torch/cuda.h>

#include "core/device_name.h"
#include "core/error.h"
#include "core/precision.h"
#include "core/suggest.h"
#include "profiler/clock_warmup.h"
#include "profiler/cuda_probe.h"
#include "profiler/layer_profiler.h"
#include "profiler/machine_memory.h"
#include "profiler/profile_request.h"
#include "profiler/torch_error.h"
#include "profiler/reference_kernel.h"
#include "profiler/torch_runtime.h"
#include "profiler/torchscript_chain.h"

#ifdef STAGECUT_HAVE_CUDA
#include "profiler/cuda_event_timer.h"
#include "profiler/cupti_timer.h"
#endif

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

const std::vector<std::string> kCpuTimers = {"steady_clock"};
const std::vector<std::string> kCudaTimers = {"cuda-events", "cupti"};

DeviceName readDeviceName(const std::string& device) {
  const std::optional<DeviceName> name = parseDeviceName(device);
  if (!name) throw Error("--device " + device + ": unknown device; use cpu, cuda or cuda:K (K a device number, e.g. cuda:0)");
  return *name;
}

bool isCudaDevice(const std::string& device) { return readDeviceName(device).cuda; }

// "cuda" is device 0, as in LibTorch when nothing else is current; "cuda:K" is device K.
int cudaOrdinal(const std::string& device) { return std::max(readDeviceName(device).ordinal, 0); }

// Checks the device and timer names and resolves "auto"; the timer's own device check follows.
std::string resolveTimerName(const ProfileRequest& request) {
  const bool cuda = isCudaDevice(request.device);
  std::vector<std::string> known = {"auto"};
  known.insert(known.end(), kCpuTimers.begin(), kCpuTimers.end());
  known.insert(known.end(), kCudaTimers.begin(), kCudaTimers.end());
  if (std::find(known.begin(), known.end(), request.timer) == known.end()) {
    throw Error("--timer " + request.timer + ": unknown timer" + unknownNameHint(request.timer, known));
  }
  if (request.timer == "auto") return cuda ? kCudaTimers.front() : kCpuTimers.front();
  if (!cuda && request.timer != "steady_clock") {
    throw Error("--timer " + request.timer + ": only steady_clock times CPU work; cuda-events and "
                "cupti need --device cuda");
  }
  if (cuda && request.timer == "steady_clock") {
    throw Error("--timer steady_clock: a host clock does not wait for the GPU's queued kernels; with --device " +
                request.device + " use cuda-events (the default) or cupti");
  }
  return request.timer;
}

std::string checkTimer(const ProfileRequest& request) {
  const std::string timer = resolveTimerName(request);
  if (!isCudaDevice(request.device)) return timer;
  requireCudaDevice(request.device);
#ifndef STAGECUT_HAVE_CUDA
  throw Error("--device " + request.device + ": this stagecut was built without its CUDA timers (STAGECUT_CUDA=OFF "
              "or no CUDA toolkit at configure time); reconfigure with -DSTAGECUT_CUDA=ON");
#else
  const int ordinal = cudaOrdinal(request.device);
  const int devices = static_cast<int>(torch::cuda::device_count());
  if (ordinal >= devices) {
    throw Error("--device " + request.device + ": LibTorch sees " + std::to_string(devices) +
                " CUDA device(s); use cuda:0" + (devices > 1 ? " to cuda:" + std::to_string(devices - 1) : ""));
  }
  return timer;
#endif
}

#ifdef STAGECUT_HAVE_CUDA

// Times with CUPTI's kernel records, keeping the CUDA-event time of the same regions: the
// profile's layers get the kernel sums, run.extra["cupti"] the per-layer comparison.
Profile measureWithCupti(LayerChain chain, MeasureOptions measure, std::unique_ptr<CudaEventTimer> fence) {
  CuptiTimer timer(loadCuptiActivityApi(), std::move(fence));
  const auto noting = [&timer](ChainLayer& layer, int i) {
    auto forward = layer.forward;
    layer.forward = [forward, i, &timer](const torch::Tensor& input, const torch::Tensor& target) {
      timer.noteLayerForward(i);
      return forward(input, target);
    };
  };
  for (int i = 0; i < static_cast<int>(chain.layers.size()); ++i) {
    ChainLayer& layer = chain.layers[i];
    if (layer.built()) noting(layer, i);
    // A layer built later (one at a time) is noted when it is built.
    if (layer.build) {
      layer.build = [build = layer.build, noting, i](ChainLayer& into) {
        build(into);
        noting(into, i);
      };
    }
  }
  timer.setWarmup(measure.warmup_rounds != 0);
  auto on_progress = measure.on_progress;
  measure.on_progress = [on_progress, &timer](const MeasureProgress& progress) {
    timer.setWarmup(progress.warmup);
    if (on_progress) on_progress(progress);
  };
  Profile profile = measureLayerChain(chain, measure, timer);
  std::vector<std::string> names;
  for (const auto& layer : chain.layers) names.push_back(layer.name);
  profile.run.extra["cupti"] = {
      {"times", "layers' *_ms are sums of kernel durations; forward_event_ms is the CUDA-event time of the same "
                "forward regions"},
      {"dropped_records", timer.droppedRecords()},
      {"layers", layerBreakdownJson(timer.layerBreakdown(static_cast<int>(chain.layers.size())), names)}};
  return profile;
}

// Matrix products in the profile's precision, about 20 ms of them, until their time stops
// falling: the layers are then timed at the clock a training step runs at.
ClockWarmup warmGpuClocks(CudaEventTimer& timer, int ordinal, torch::ScalarType floating) {
  torch::NoGradGuard no_grad;
  const auto options = torch::TensorOptions().dtype(floating).device(torch::kCUDA, static_cast<c10::DeviceIndex>(ordinal));
  const torch::Tensor a = torch::linspace(0.0, 1.0, 4096 * 4096, options).reshape({4096, 4096});
  torch::Tensor product = torch::mm(a, a);
  timer.start();
  product = torch::mm(a, a);
  const int products = static_cast<int>(std::clamp(20.0 / std::max(timer.stopMs(), 1e-3), 1.0, 1000.0));
  return warmUntilSteady(timer, [&] {
    for (int k = 0; k < products; ++k) product = torch::mm(a, a);
  });
}

Profile profileOnCuda(LayerChain chain, const MeasureOptions& measure, const std::string& device,
                      const std::string& timer_name, torch::ScalarType floating) {
  const int ordinal = cudaOrdinal(device);
  placeChain(chain, torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(ordinal)), floating);
  auto events = std::make_unique<CudaEventTimer>(ordinal);
  const std::string device_name = events->deviceName();
  const int driver_version = events->driverVersion();
  const ClockWarmup warmup = warmGpuClocks(*events, ordinal, floating);
  Profile profile = timer_name == "cupti" ? measureWithCupti(chain, measure, std::move(events))
                                          : measureLayerChain(chain, measure, *events);
  profile.device.kind = "cuda";
  profile.device.name = device_name;
  profile.device.extra = {{"ordinal", ordinal},
                          {"driver_cuda_version", std::to_string(driver_version / 1000) + "." +
                                                      std::to_string(driver_version % 1000 / 10)},
                          {"host_cpu", cpuModelName()},
                          {"clock_warmup", {{"first_ms", warmup.first_ms},
                                            {"steady_ms", warmup.steady_ms},
                                            {"samples", warmup.samples},
                                            {"seconds", warmup.seconds},
                                            {"steady", warmup.steady}}}};
  return profile;
}

#endif  // STAGECUT_HAVE_CUDA

void checkMeasureOptions(const MeasureOptions& options) {
  if (options.microbatch_size < 1) {
    throw Error("--microbatch " + std::to_string(options.microbatch_size) + ": must be 1 or more");
  }
  if (options.min_repeats < 1 || options.max_repeats < options.min_repeats) {
    throw Error("--min-repeats " + std::to_string(options.min_repeats) + " --max-repeats " +
                std::to_string(options.max_repeats) + ": need 1 <= min <= max");
  }
  if (options.warmup_rounds < 0 && options.warmup_rounds != kAutoWarmupPasses) throw Error("--warmup must be 0 or more");
  if (!(options.cv_target > 0)) throw Error("--cv-target must be more than 0, e.g. 0.03");
}

// Measures `chain` at every requested size on `timer`; with several sizes the result lists each
// (format 2) and its layers hold the largest.
template <typename Measure>
Profile measureSizes(const ProfileRequest& request, const MeasureOptions& base, Measure measure) {
  std::vector<int> sizes = request.microbatch_sizes;
  if (sizes.empty()) sizes.push_back(base.microbatch_size);
  MeasureCheckpoint checkpoint;
  if (request.resume) checkpoint.request = request.resume->request;
  // Every size starts from what the side file kept, so that a size finished before an earlier
  // interruption stays in the side file when this run is interrupted again.
  checkpoint.sizes.resize(sizes.size());
  for (std::size_t position = 0; position < sizes.size(); ++position) {
    const SizeCheckpoint* earlier = request.resume ? request.resume->find(sizes[position]) : nullptr;
    if (earlier != nullptr) checkpoint.sizes[position] = *earlier;
    checkpoint.sizes[position].microbatch_size = sizes[position];
  }
  std::vector<Profile> measured;
  for (std::size_t position = 0; position < sizes.size(); ++position) {
    MeasureOptions options = base;
    options.microbatch_size = sizes[position];
    const SizeCheckpoint* earlier = request.resume ? request.resume->find(sizes[position]) : nullptr;
    options.resume = earlier;
    if (base.on_progress) {
      options.on_progress = [&base, position, &sizes](const MeasureProgress& progress) {
        MeasureProgress sized = progress;
        sized.size_position = static_cast<int>(position);
        sized.sizes = static_cast<int>(sizes.size());
        base.on_progress(sized);
      };
    }
    if (request.on_checkpoint) {
      options.on_checkpoint = [&request, &checkpoint, position](const SizeCheckpoint& samples) {
        checkpoint.sizes[position] = samples;
        request.on_checkpoint(checkpoint);
      };
    }
    measured.push_back(measure(options));
  }
  Profile profile = measured.back();
  if (sizes.size() > 1) {
    for (std::size_t position = 0; position < sizes.size(); ++position) {
      MicrobatchSizeCosts entry;
      entry.microbatch_size = sizes[position];
      entry.layers = measured[position].layers;
      entry.whole_model = measured[position].whole_model;
      profile.microbatch_sizes.push_back(std::move(entry));
    }
    std::size_t resumed = 0;
    for (const auto& one : measured) resumed += one.run.extra.value("resumed_samples", std::size_t{0});
    if (resumed > 0) profile.run.extra["resumed_samples"] = resumed;
    double elapsed = 0;
    for (const auto& one : measured) elapsed += one.run.extra.value("elapsed_s", 0.0);
    profile.run.extra["elapsed_s"] = elapsed;
  }
  return profile;
}

// A precision the device cannot compute in fails in the first layer with a kernel name; say it
// before the model is built, with what to use instead (LibTorch 1.13 has no float16 matrix
// products on the CPU).
void requirePrecisionRuns(const std::string& device, const std::string& precision, torch::ScalarType type) {
  try {
    const auto options = torch::TensorOptions().dtype(type).device(torch::Device(device));
    const auto a = torch::ones({4, 4}, options).requires_grad_();
    torch::mm(torch::softmax(a, -1), a).sum().backward();
  } catch (const std::exception& error) {
    throw Error("--dtype " + precision + " on " + device + ": this LibTorch (" + torchRuntimeInfo().torch_version +
                ") cannot compute in " + precision + " there (" + torchErrorLine(error) + "); use " +
                (precision == "float16" ? "bfloat16, or profile on cuda" : "float32"));
  }
}

// The precision the layers run in: --dtype's, else the one the model was built in (float32 for
// the zoo; a TorchScript module keeps its own).
torch::ScalarType chainPrecision(const ProfileRequest& request, const LayerChain& chain) {
  if (request.dtype.empty()) return chainFloatingType(chain);
  const std::string precision = canonicalPrecision(request.dtype);
  const torch::ScalarType type = scalarTypeOfPrecision(precision);
  requirePrecisionRuns(request.device, precision, type);
  return type;
}

// The chain the request names: a TorchScript module's children, or a zoo model described
// through its family (model_families.h).
LayerChain chainOfRequest(const ProfileRequest& request) {
  if (!request.torchscript_path.empty()) {
    if (request.input_spec.empty()) {
      throw Error("--torchscript " + request.torchscript_path +
                  ": needs --input, e.g. --input 8x3x224x224:float32");
    }
    if (request.microbatch_sizes.size() > 1) {
      throw Error("--torchscript " + request.torchscript_path + ": the microbatch size is the first dimension " +
                  "of --input, so a TorchScript chain is profiled at one size; run profile once per size");
    }
    const InputSpec input = parseInputSpec(request.input_spec);
    return loadTorchScriptChain(request.torchscript_path, input, request.measure.seed);
  }
  return describeZooModel(profiledZooOptions(request));
}

}  // namespace

ZooOptions profiledZooOptions(const ProfileRequest& request) {
  ZooOptions zoo = request.zoo;
  // Built here in float32, then moved: on a GPU the gradients take the GPU's memory, not ours.
  if (isCudaDevice(request.device)) zoo.host_bytes_per_parameter = 4.0;
  // Each layer is built when it is timed (measureLayerChain): the memory that counts is the
  // largest layer's, never the whole model's.
  zoo.one_layer_at_a_time = true;
  return zoo;
}

Profile runProfile(const ProfileRequest& request) {
  const std::string timer_name = checkTimer(request);
  checkMeasureOptions(request.measure);
  for (int size : request.microbatch_sizes) {
    if (size < 1) throw Error("--microbatch " + std::to_string(size) + ": must be 1 or more");
  }
  pinThreads(request.threads);
  retainFreedMemory();

  LayerChain chain = chainOfRequest(request);
  const torch::ScalarType precision = chainPrecision(request, chain);
  MeasureOptions measure = request.measure;
  ProfileRequest sized_request = request;
  if (!request.torchscript_path.empty()) {
    measure.microbatch_size = static_cast<int>(parseInputSpec(request.input_spec).shape[0]);
    sized_request.microbatch_sizes.clear();
  }
  const TorchRuntimeInfo runtime = torchRuntimeInfo();
  // The machine's pace before and after, for validate to hold its own runs to (docs/runtime.md).
  const double reference_before_ms = timeReferenceKernelMs();
  const auto recordReference = [&](Profile& profile) {
    const double reference_after_ms = timeReferenceKernelMs();
    profile.device.extra["reference_kernel_ms"] = (reference_before_ms + reference_after_ms) / 2;
    profile.device.extra["reference_kernel_change"] = reference_after_ms / reference_before_ms - 1.0;
  };
#ifdef STAGECUT_HAVE_CUDA
  if (isCudaDevice(request.device)) {
    Profile profile = measureSizes(sized_request, measure, [&](const MeasureOptions& options) {
      return profileOnCuda(chain, options, request.device, timer_name, precision);
    });
    profile.device.threads = runtime.intraop_threads;
    profile.device.torch = runtime.torch_version;
    recordReference(profile);
    return profile;
  }
#endif
  placeChain(chain, torch::kCPU, precision);
  // On the CPU the reference kernel runs where the layers run, so it tells their phases apart.
  if (!measure.pace.probe_ms) measure.pace.probe_ms = [] { return timeReferenceKernelMs(); };
  // The whole-model check takes what the machine has free once the timed layers are built, less
  // a margin for the allocator's caches and the rest of the process.
  if (!measure.window_bytes) {
    measure.window_bytes = [] { return static_cast<std::uint64_t>(0.7 * static_cast<double>(availableMemoryBytes())); };
  }
  SteadyClockTimer timer;
  Profile profile = measureSizes(sized_request, measure, [&](const MeasureOptions& options) {
    return measureLayerChain(chain, options, timer);
  });

  profile.device.kind = "cpu";
  profile.device.name = cpuModelName();
  profile.device.threads = runtime.intraop_threads;
  profile.device.torch = runtime.torch_version;
  profile.device.extra = {{"interop_threads", runtime.interop_threads},
                          {"blas", runtime.blas},
                          {"blas_threads", runtime.blas_threads},
                          {"heap", runtime.heap}};
  recordReference(profile);
  return profile;
}

}  // namespace stagecut
