#include "profiler/layer_memory.h"

#include <algorithm>

#include "profiler/weight_gradient_split.h"

namespace stagecut {

namespace {

std::uint64_t positivePart(std::int64_t bytes) { return bytes > 0 ? static_cast<std::uint64_t>(bytes) : 0; }

}  // namespace

std::uint64_t tensorBytes(const torch::Tensor& tensor) {
  return static_cast<std::uint64_t>(tensor.numel()) * tensor.element_size();
}

torch::Tensor layerInput(const ChainLayer& layer, const torch::Tensor& leaf) {
  return layer.modifies_input ? leaf.clone() : leaf;
}

CountedForward countedForward(const ChainLayer& layer, const torch::Tensor& input, const torch::Tensor& target) {
  torch::Tensor leaf = input.detach();
  if (leaf.is_floating_point()) leaf.requires_grad_(true);
  CountedForward counted;
  MemoryCounter counter(input.device().type());
  torch::Tensor given = leaf.clone();
  const auto given_bytes = static_cast<std::int64_t>(tensorBytes(given));
  counter.resetPeak();
  counted.output = layer.forward(layerInput(layer, given), target);
  const std::int64_t after_forward = counter.liveBytes();
  counted.forward_transient = positivePart(counter.peakBytes() - after_forward);
  given = torch::Tensor();
  const std::int64_t after_drop = counter.liveBytes();
  counted.input_kept = positivePart(given_bytes - (after_forward - after_drop));
  counted.activation = positivePart(after_drop - static_cast<std::int64_t>(tensorBytes(counted.output)));
  return counted;
}

std::uint64_t measureActivationBytes(const ChainLayer& layer, const torch::Tensor& input,
                                     const torch::Tensor& target) {
  return countedForward(layer, input, target).activation;
}

LayerMemoryBytes measureForwardBackwardMemory(const ChainLayer& layer, const CountedForward& forward,
                                              const torch::Tensor& upstream_grad) {
  LayerMemoryBytes bytes;
  bytes.activation = forward.activation;
  bytes.input_kept = forward.input_kept;
  bytes.forward_transient = forward.forward_transient;
  for (const auto& parameter : layer.parameters) {
    bytes.largest_parameter = std::max(bytes.largest_parameter, tensorBytes(parameter));
    if (parameter.requires_grad() && !parameter.grad().defined()) parameter.mutable_grad() = torch::zeros_like(parameter);
  }
  if (forward.output.requires_grad()) {
    MemoryCounter counter(forward.output.device().type());
    torch::autograd::backward({forward.output}, {upstream_grad});
    bytes.backward_transient = positivePart(counter.peakBytes());
  }
  for (const auto& parameter : layer.parameters) {
    if (parameter.grad().defined()) bytes.gradients += tensorBytes(parameter.grad());
    parameter.mutable_grad() = torch::Tensor();
  }
  return bytes;
}

std::uint64_t pendingForWeights(const MemoryCounter& count, const std::vector<torch::Tensor>& input_grads) {
  std::int64_t returned = 0;
  for (const auto& grad : input_grads) returned += grad.defined() ? static_cast<std::int64_t>(tensorBytes(grad)) : 0;
  return positivePart(count.liveBytes() - returned);
}

std::uint64_t measureWeightPending(const ChainLayer& layer, const torch::Tensor& input,
                                   const torch::Tensor& upstream_grad, const torch::Tensor& target) {
  if (layer.parameters.empty() || !input.requires_grad()) return 0;
  const torch::Tensor output = layer.forward(layerInput(layer, input), target);
  if (!output.requires_grad()) return 0;
  MemoryCounter counter(output.device().type());
  WeightGradientSplit split(output, {input}, layer.parameters);
  return pendingForWeights(counter, torch::autograd::grad({output}, {input}, {upstream_grad}, true, false, true));
}

}  // namespace stagecut
