#include "profiler/whole_model_window.h"

#include <algorithm>

namespace stagecut {

namespace {

// A window's transient is its largest layer's, forward or backward.
std::uint64_t largestTransientBytes(const std::vector<LayerCost>& layers, int first, int last) {
  std::uint64_t transient = 0;
  for (int i = first; i <= last; ++i) {
    transient = std::max({transient, layers[i].forward_transient_bytes.value_or(0),
                          layers[i].backward_transient_bytes.value_or(0)});
  }
  return transient;
}

}  // namespace

std::uint64_t layerResidentBytes(const LayerCost& cost) {
  return cost.param_bytes + cost.gradient_bytes.value_or(cost.param_bytes) + cost.activation_bytes + cost.output_bytes;
}

std::uint64_t windowPassBytes(const std::vector<LayerCost>& layers, std::pair<int, int> window) {
  std::uint64_t kept = 0;
  for (int i = window.first; i <= window.second; ++i) kept += layers[i].activation_bytes + layers[i].output_bytes;
  return kept + largestTransientBytes(layers, window.first, window.second);
}

std::pair<int, int> wholeModelWindow(const std::vector<LayerCost>& layers, std::uint64_t budget_bytes) {
  const int count = static_cast<int>(layers.size());
  if (count == 0) return {0, -1};
  std::pair<int, int> best = {0, 0};
  std::uint64_t resident = 0;
  // Two pointers over the chain.
  int first = 0;
  for (int last = 0; last < count; ++last) {
    resident += layerResidentBytes(layers[last]);
    const auto fits = [&] {
      return budget_bytes == 0 || resident + largestTransientBytes(layers, first, last) <= budget_bytes;
    };
    while (first < last && !fits()) resident -= layerResidentBytes(layers[first++]);
    if (last - first > best.second - best.first && fits()) best = {first, last};
  }
  return best;
}

}  // namespace stagecut
