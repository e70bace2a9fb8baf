#include "prediction/context_parallel_comm.h"

#include <algorithm>

namespace stagecut {

std::pair<double, double> contextParallelExchangeMs(const LayerCost& layer, const BoundaryLink& link) {
  if (!layer.cp_exchange || link.isFree()) return {0.0, 0.0};
  const double step = link.transferMs(layer.cp_exchange->bytes);
  return {layer.cp_exchange->forward_steps * step, layer.cp_exchange->backward_steps * step};
}

namespace {

void addExposedMs(TimeStatsMs& stats, double ms) {
  stats.median += ms;
  stats.min += ms;
  stats.max += ms;
}

void priceLayers(std::vector<LayerCost>& layers, const BoundaryLink& link) {
  for (LayerCost& layer : layers) {
    const auto [forward, backward] = contextParallelExchangeMs(layer, link);
    const double forward_exposed = std::max(0.0, forward - layer.forward_ms.median);
    const double backward_exposed = std::max(0.0, backward - layer.backward_ms.median);
    addExposedMs(layer.forward_ms, forward_exposed);
    addExposedMs(layer.backward_ms, backward_exposed);
    if (layer.backward_input_ms) addExposedMs(*layer.backward_input_ms, backward_exposed);
  }
}

}  // namespace

void priceContextParallelExchange(Profile& profile, const BoundaryLink& link) {
  if (link.isFree()) return;
  priceLayers(profile.layers, link);
  for (auto& size : profile.microbatch_sizes) priceLayers(size.layers, link);
}

}  // namespace stagecut
