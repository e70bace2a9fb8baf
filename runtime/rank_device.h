#pragma once

#include <torch/torch.h>

#include "validation/rank_devices.h"

namespace stagecut {

/// The GPUs LibTorch sees in this process, and why there are none: a CPU-only LibTorch, no
/// driver, no device. Never throws.
VisibleGpus visibleGpus();

/// The memory a device offers a run: the CPU's available memory (all of this machine's ranks
/// share it), a GPU's total; 0 when unknown. Never throws.
std::uint64_t deviceMemoryBytes(const std::string& device);

/// Waits until the work queued on `device` has run: a GPU's kernels return before they finish,
/// so an op's end is read after this. Nothing to wait for on the CPU.
void waitForDevice(const torch::Device& device);

}  // namespace stagecut
