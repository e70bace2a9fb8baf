#pragma once

// Which layers the whole-model check times together when the whole model does not fit the
// device: the longest run of consecutive layers whose weights, gradients, kept activations and
// outputs, with the largest transient among them, fit the bytes at hand. LibTorch-free.

#include <cstdint>
#include <utility>
#include <vector>

#include "core/profile.h"

namespace stagecut {

/// Bytes layer `cost` holds while the chain around it runs forward and backward: its weights,
/// their gradients, what it keeps for the backward and its output.
std::uint64_t layerResidentBytes(const LayerCost& cost);

/// Bytes a pass over layers `window` {first, last} allocates besides the weights and their
/// gradients: each layer's kept activations and output, and the largest transient among them.
std::uint64_t windowPassBytes(const std::vector<LayerCost>& layers, std::pair<int, int> window);

/// {first, last} of the longest run of consecutive `layers` that fits `budget_bytes` (the
/// earliest of equal length); the whole chain when budget_bytes is 0 or it fits. At least one
/// layer.
std::pair<int, int> wholeModelWindow(const std::vector<LayerCost>& layers, std::uint64_t budget_bytes);

}  // namespace stagecut
