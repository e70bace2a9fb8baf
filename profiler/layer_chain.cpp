#include "profiler/layer_chain.h"

#include "core/error.h"
#include "profiler/torch_error.h"

namespace stagecut {

torch::Tensor LayerChain::forward(const ChainBatch& batch) const {
  torch::Tensor activation = !layers.empty() && layers.front().modifies_input ? batch.input.clone() : batch.input;
  for (const auto& layer : layers) activation = layer.forward(activation, batch.target);
  return activation;
}

std::vector<torch::Tensor> LayerChain::parameters() const {
  std::vector<torch::Tensor> all;
  for (const auto& layer : layers) all.insert(all.end(), layer.parameters.begin(), layer.parameters.end());
  return all;
}

std::string LayerChain::displayName() const {
  const std::string torchscript = "torchscript:";
  if (source.rfind(torchscript, 0) == 0) return source.substr(torchscript.size());
  return "zoo model " + model_name;
}

void placeChainOnDevice(LayerChain& chain, const torch::Device& device) {
  {
    torch::NoGradGuard no_grad;
    for (auto& layer : chain.layers) {
      for (auto& parameter : layer.parameters) parameter.set_data(parameter.data().to(device));
    }
  }
  auto make_batch = chain.make_batch;
  chain.make_batch = [make_batch, device](int rows, std::uint64_t seed) {
    ChainBatch batch = make_batch(rows, seed);
    batch.input = batch.input.to(device);
    if (batch.target.defined()) batch.target = batch.target.to(device);
    return batch;
  };
}

std::string describeLayer(std::size_t index, const ChainLayer& layer) {
  return "layer " + std::to_string(index) + " (" + layer.name + (layer.kind.empty() ? "" : ", " + layer.kind) + ")";
}

void throwLayerError(const LayerChain& chain, int layer, const std::exception& error) {
  const std::string what = layer < 0 ? "the whole model"
                                     : describeLayer(static_cast<std::size_t>(layer),
                                                     chain.layers.at(static_cast<std::size_t>(layer)));
  const bool users_model = chain.source.rfind("torchscript:", 0) == 0;
  throw Error(chain.displayName() + ": " + what + " failed while being measured (" + torchErrorLine(error) + ")" +
                  (users_model ? "; fix the module, or leave that step out of the chain" : ""),
              users_model ? ErrorKind::kInput : ErrorKind::kRuntime);
}

}  // namespace stagecut
