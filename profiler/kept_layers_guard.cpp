#include "profiler/kept_layers_guard.h"

#include <algorithm>
#include <string>

#include "core/error.h"
#include "core/units.h"
#include "profiler/layer_memory.h"
#include "profiler/machine_memory.h"

namespace stagecut {

void KeptLayersGuard::beforeBuilding(const LayerChain& chain, std::size_t index) const {
  if (!on_host_ || largest_ == 0) return;
  const std::uint64_t available = availableMemoryBytes();
  if (available >= largest_ + largest_ / 2) return;
  throw Error("profile: the timed layers kept built so far hold " + formatBytes(kept_) +
                  " with their gradients, and this machine has " + formatBytes(available) +
                  " left: too little to build layer " + std::to_string(index) + " (" + chain.layers[index].name +
                  ") beside them; profile a smaller shard (a larger --tensor-parallel), fewer --layers, or on a "
                  "machine with more memory",
              ErrorKind::kRuntime);
}

void KeptLayersGuard::kept(const ChainLayer& layer, std::uint64_t gradient_bytes) {
  std::uint64_t weights = 0;
  for (const auto& parameter : layer.parameters) weights += tensorBytes(parameter);
  const std::uint64_t bytes = weights + (gradient_bytes > 0 ? gradient_bytes : weights);
  kept_ += bytes;
  largest_ = std::max(largest_, bytes);
}

}  // namespace stagecut
