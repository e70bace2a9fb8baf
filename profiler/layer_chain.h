#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

namespace stagecut {

/// One layer of a chain: what the profiler times and a pipeline stage runs. `forward` takes the
/// previous layer's output and the batch's target (used only by a loss layer).
struct ChainLayer {
  std::string name;
  std::string kind;
  std::function<torch::Tensor(const torch::Tensor& input, const torch::Tensor& target)> forward;
  std::vector<torch::Tensor> parameters;  ///< leaves that receive gradients
  std::shared_ptr<void> owner;            ///< keeps the module behind `forward` alive
};

/// A microbatch (or the full batch): the first layer's input and the loss layer's target.
struct ChainBatch {
  torch::Tensor input;
  torch::Tensor target;  ///< undefined when the chain has no loss layer
};

/// A model as a chain of layers, with the way to make its seeded batches.
struct LayerChain {
  std::string model_name;
  std::string source;  ///< "zoo:gpt", "torchscript:model.pt"
  nlohmann::json config = nlohmann::json::object();
  std::vector<ChainLayer> layers;
  /// Builds a batch of `rows` samples; the same (rows, seed) gives the same batch everywhere.
  std::function<ChainBatch(int rows, std::uint64_t seed)> make_batch;

  /// Runs every layer in order on `batch` (autograd as currently enabled).
  torch::Tensor forward(const ChainBatch& batch) const;
  /// All parameters of all layers, in layer order.
  std::vector<torch::Tensor> parameters() const;
};

}  // namespace stagecut
