#pragma once

#include <string>
#include <vector>

namespace stagecut {

/// The device of each rank of a validate run: "cpu", or "cuda:K" for GPU K as the rank's
/// process sees it (after CUDA_VISIBLE_DEVICES).
struct RankDevices {
  std::vector<std::string> devices;  ///< per global rank
  /// True when some GPU runs more than one rank: they take turns on it.
  bool shares_a_gpu = false;
};

/// What this host offers a validate run, asked of LibTorch by the caller.
struct VisibleGpus {
  int count = 0;
  std::string reason;  ///< why there are none (no driver, a CPU-only LibTorch), for the error
};

/// Places `world_size` ranks for `--device requested`:
/// - "auto": the device kind the profile was measured on (`profile_kind`, "cpu" or "cuda"), so
///   that the run is held to times of its own kind;
/// - "cpu": every rank on the CPU;
/// - "cuda": rank r on GPU r while there are enough GPUs, else round robin (ranks share GPUs);
/// - "cuda:K": every rank on GPU K.
/// Throws Error (kInput) naming `--device` and the fix for an unknown device, a GPU this host
/// does not have, or CUDA without any GPU.
RankDevices planRankDevices(const std::string& requested, const std::string& profile_kind, int world_size,
                            const VisibleGpus& gpus);

/// How a validate run's pipeline ranks exchange activations and gradients (`--backend`):
/// - "auto": "nccl" where every rank has a GPU of its own and this LibTorch has NCCL
///   (`nccl_available`), else "gloo" (a GPU stage's tensors then go through host copies);
/// - "gloo": Gloo always;
/// - "nccl": NCCL. Refused for CPU ranks, for ranks that share a GPU (NCCL takes one rank per
///   GPU) and where this LibTorch has no NCCL: Error (kInput) naming --backend and the fix.
/// Returns "gloo" or "nccl". Data-parallel replicas sum their gradients over Gloo either way.
std::string choosePipelineBackend(const std::string& requested, const RankDevices& plan, bool nccl_available);

/// "cpu" or "cuda": the kind of a device name of the plan.
std::string deviceKind(const std::string& device);

}  // namespace stagecut
