#pragma once

#include <memory>

#include <torch/torch.h>

#include "runtime/rendezvous.h"
#include "runtime/stage_transport.h"

namespace c10d {
class Store;
}  // namespace c10d

namespace stagecut {

/// Whether this stagecut's LibTorch runs NCCL (a CUDA build with c10d's NCCL group).
bool ncclAvailable();

/// The pipeline's transport between the stages' GPUs, without host copies: two NCCL groups over
/// `store` (prefixed "pipeline-down/<replica>" and "pipeline-up/<replica>"), one per direction
/// (DirectionSplitTransport), with barriers through `control`, which must outlive it. NCCL
/// creates each pair's communicator at the pair's first message. Throws Error (kInput) where
/// ncclAvailable() is false, Error (kRuntime) when NCCL cannot start.
std::unique_ptr<StageTransport> openNcclTransport(const c10::intrusive_ptr<c10d::Store>& store, const RendezvousInfo& info,
                                                  const torch::Device& device, StageTransport& control);

}  // namespace stagecut
