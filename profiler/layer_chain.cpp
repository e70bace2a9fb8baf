#include "profiler/layer_chain.h"

namespace stagecut {

torch::Tensor LayerChain::forward(const ChainBatch& batch) const {
  torch::Tensor activation = batch.input;
  for (const auto& layer : layers) activation = layer.forward(activation, batch.target);
  return activation;
}

std::vector<torch::Tensor> LayerChain::parameters() const {
  std::vector<torch::Tensor> all;
  for (const auto& layer : layers) all.insert(all.end(), layer.parameters.begin(), layer.parameters.end());
  return all;
}

}  // namespace stagecut
