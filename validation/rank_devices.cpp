#include "validation/rank_devices.h"

#include <map>

#include "core/device_name.h"
#include "core/error.h"

namespace stagecut {

namespace {

std::string noGpu(const std::string& flag, const VisibleGpus& gpus) {
  return flag + ": this machine offers no GPU" + (gpus.reason.empty() ? "" : " (" + gpus.reason + ")") +
         "; validate with --device cpu, or run on a machine with a GPU and a stagecut built against a CUDA "
         "LibTorch (docs/profiler-gpu.md)";
}

}  // namespace

std::string deviceKind(const std::string& device) {
  const std::optional<DeviceName> name = parseDeviceName(device);
  return name && name->cuda ? "cuda" : "cpu";
}

RankDevices planRankDevices(const std::string& requested, const std::string& profile_kind, int world_size,
                            const VisibleGpus& gpus) {
  std::string device = requested;
  std::string flag = "--device " + requested;
  if (requested == "auto") {
    device = profile_kind == "cuda" ? "cuda" : "cpu";
    flag = "--device auto (the profile was measured on " + device + ")";
  }
  const std::optional<DeviceName> name = parseDeviceName(device);
  if (!name) {
    throw Error("--device " + requested + ": unknown device; use auto, cpu, cuda or cuda:K (K a GPU number, e.g. cuda:0)");
  }
  const int ordinal = name->ordinal;
  RankDevices plan;
  if (!name->cuda) {
    plan.devices.assign(static_cast<std::size_t>(world_size), "cpu");
    return plan;
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

std::string choosePipelineBackend(const std::string& requested, const RankDevices& plan, bool nccl_available) {
  if (requested != "auto" && requested != "gloo" && requested != "nccl") {
    throw Error("--backend " + requested + ": unknown backend; use auto, gloo or nccl");
  }
  bool on_gpus = !plan.devices.empty();
  for (const std::string& device : plan.devices) on_gpus = on_gpus && deviceKind(device) == "cuda";
  if (requested == "gloo") return "gloo";
  if (requested == "auto") return on_gpus && !plan.shares_a_gpu && nccl_available ? "nccl" : "gloo";
  if (!on_gpus) {
    throw Error("--backend nccl: the ranks run on the CPU, and NCCL carries tensors between GPUs; use --device cuda, "
                "or --backend gloo");
  }
  if (plan.shares_a_gpu) {
    throw Error("--backend nccl: " + std::to_string(plan.devices.size()) +
                " ranks share this machine's GPUs, and NCCL takes one rank per GPU; run on a machine with as many "
                "GPUs as ranks, or use --backend gloo");
  }
  if (!nccl_available) {
    throw Error("--backend nccl: this stagecut's LibTorch has no NCCL (a CPU build); build against a CUDA LibTorch "
                "(make build TORCH=pip), or use --backend gloo");
  }
  return "nccl";
}

}  // namespace stagecut
