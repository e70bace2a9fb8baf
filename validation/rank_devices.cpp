#include "validation/rank_devices.h"

#include <map>

#include "core/error.h"

namespace stagecut {

namespace {

// K of "cuda:K", or -1 when `device` is not of that form.
int cudaOrdinal(const std::string& device) {
  const std::string prefix = "cuda:";
  if (device.rfind(prefix, 0) != 0 || device.size() == prefix.size() || device.size() > prefix.size() + 4) return -1;
  int ordinal = 0;
  for (std::size_t i = prefix.size(); i < device.size(); ++i) {
    if (device[i] < '0' || device[i] > '9') return -1;
    ordinal = ordinal * 10 + (device[i] - '0');
  }
  return ordinal;
}

std::string noGpu(const std::string& flag, const VisibleGpus& gpus) {
  return flag + ": this machine offers no GPU" + (gpus.reason.empty() ? "" : " (" + gpus.reason + ")") +
         "; validate with --device cpu, or run on a machine with a GPU and a stagecut built against a CUDA "
         "LibTorch (docs/profiler-gpu.md)";
}

}  // namespace

std::string deviceKind(const std::string& device) { return device.rfind("cuda", 0) == 0 ? "cuda" : "cpu"; }

RankDevices planRankDevices(const std::string& requested, const std::string& profile_kind, int world_size,
                            const VisibleGpus& gpus) {
  std::string device = requested;
  std::string flag = "--device " + requested;
  if (requested == "auto") {
    device = profile_kind == "cuda" ? "cuda" : "cpu";
    flag = "--device auto (the profile was measured on " + device + ")";
  }
  RankDevices plan;
  if (device == "cpu") {
    plan.devices.assign(static_cast<std::size_t>(world_size), "cpu");
    return plan;
  }
  const int ordinal = device == "cuda" ? -1 : cudaOrdinal(device);
  if (device != "cuda" && ordinal < 0) {
    throw Error("--device " + requested + ": unknown device; use auto, cpu, cuda or cuda:K (K a GPU number, e.g. cuda:0)");
  }
  if (gpus.count < 1) throw Error(noGpu(flag, gpus));
  if (ordinal >= gpus.count) {
    throw Error(flag + ": this machine shows " + std::to_string(gpus.count) + " GPU(s), cuda:0" +
                (gpus.count > 1 ? " to cuda:" + std::to_string(gpus.count - 1) : "") +
                "; pick one of them, or --device cuda to give each rank its own");
  }
  std::map<int, int> ranks_per_gpu;
  for (int rank = 0; rank < world_size; ++rank) {
    const int gpu = ordinal >= 0 ? ordinal : rank % gpus.count;
    plan.devices.push_back("cuda:" + std::to_string(gpu));
    if (++ranks_per_gpu[gpu] > 1) plan.shares_a_gpu = true;
  }
  return plan;
}

}  // namespace stagecut
