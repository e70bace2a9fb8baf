#pragma once

// The host memory of the layers a profile keeps built: the timed ones, with their gradients, from
// the input sweep to the end of the run. A model whose timed layers outgrow the host stops with
// a message naming the layer instead of at the kernel's OOM killer.

#include <cstddef>
#include <cstdint>

#include "profiler/layer_chain.h"

namespace stagecut {

/// The next layer is taken to be no larger than the largest kept so far, with half as much again
/// for its measurement's transients. On a GPU the layers live in its memory, whose own allocator
/// refuses with an error, so the guard does nothing there.
class KeptLayersGuard {
 public:
  explicit KeptLayersGuard(bool on_host) : on_host_(on_host) {}

  /// Throws Error (run time) naming layer `index` of `chain` when the host's free memory
  /// (availableMemoryBytes) has no room for it beside the kept layers.
  void beforeBuilding(const LayerChain& chain, std::size_t index) const;

  /// Counts `layer`, built and kept, with `gradient_bytes` as measured; 0 for a layer whose
  /// memory another of its kind stands for, whose gradients then take its weights' bytes.
  void kept(const ChainLayer& layer, std::uint64_t gradient_bytes);

 private:
  bool on_host_;
  std::uint64_t kept_ = 0;
  std::uint64_t largest_ = 0;
};

}  // namespace stagecut
