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

namespace {

torch::Tensor placed(const torch::Tensor& tensor, const torch::Device& device, torch::ScalarType floating) {
  return tensor.is_floating_point() ? tensor.to(device, floating) : tensor.to(device);
}

}  // namespace

void placeChain(LayerChain& chain, const torch::Device& device, torch::ScalarType floating) {
  chain.device = device;
  chain.floating = floating;
  {
    torch::NoGradGuard no_grad;
    for (auto& layer : chain.layers) {
      for (auto& parameter : layer.parameters) parameter.set_data(placed(parameter.data(), device, floating));
    }
  }
  auto make_batch = chain.make_batch;
  chain.make_batch = [make_batch, device, floating](int rows, std::uint64_t seed) {
    ChainBatch batch = make_batch(rows, seed);
    batch.input = placed(batch.input, device, floating);
    if (batch.target.defined()) batch.target = placed(batch.target, device, floating);
    return batch;
  };
}

torch::ScalarType chainFloatingType(const LayerChain& chain) {
  for (const auto& layer : chain.layers) {
    for (const auto& parameter : layer.parameters) {
      if (parameter.is_floating_point()) return parameter.scalar_type();
    }
  }
  return chain.floating;
}

void buildLayer(LayerChain& chain, std::size_t index) {
  ChainLayer& layer = chain.layers.at(index);
  if (layer.built() || !layer.build) return;
  layer.build(layer);
  torch::NoGradGuard no_grad;
  for (auto& parameter : layer.parameters) parameter.set_data(placed(parameter.data(), chain.device, chain.floating));
}

void buildAllLayers(LayerChain& chain) {
  for (std::size_t i = 0; i < chain.layers.size(); ++i) buildLayer(chain, i);
}

void releaseLayer(LayerChain& chain, std::size_t index) {
  ChainLayer& layer = chain.layers.at(index);
  if (!layer.build) return;
  layer.forward = nullptr;
  layer.parameters.clear();
  layer.owner.reset();
}

namespace {

// The precisions a chain may compute in, by the names profiles record.
constexpr std::pair<const char*, torch::ScalarType> kPrecisionTypes[] = {
    {"float32", torch::kFloat32}, {"bfloat16", torch::kBFloat16}, {"float16", torch::kFloat16}, {"float64", torch::kFloat64}};

}  // namespace

torch::ScalarType scalarTypeOfPrecision(const std::string& name) {
  for (const auto& [known, type] : kPrecisionTypes) {
    if (name == known) return type;
  }
  throw Error("precision '" + name + "': not one of float32, bfloat16, float16 or float64");
}

std::string precisionNameOf(torch::ScalarType type) {
  for (const auto& [name, known] : kPrecisionTypes) {
    if (type == known) return name;
  }
  return "float32";
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
