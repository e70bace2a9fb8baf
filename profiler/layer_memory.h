#pragma once

#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "profiler/layer_chain.h"
#include "profiler/memory_counter.h"

namespace stagecut {

/// What one layer's memory needs on `input`, bytes per microbatch, measured with MemoryCounter
/// (on one layer of each group of identical ones, on the way to the first round's inputs; W's
/// share at the layer's first B/W split) as a pipeline stage runs it (the input allocated before,
/// by the stage; the weights' gradients allocated, as from the second microbatch of a step on).
/// The profile's memory fields.
struct LayerMemoryBytes {
  std::uint64_t activation = 0;         ///< measureActivationBytes
  std::uint64_t input_kept = 0;         ///< of `activation`, the input itself
  std::uint64_t forward_transient = 0;  ///< peak of the forward above what is alive after it
  std::uint64_t backward_transient = 0; ///< peak of the backward above what was alive before it
  std::uint64_t weight_pending = 0;     ///< what a B/W split's B keeps for W, beyond the input's gradient
  std::uint64_t gradients = 0;          ///< bytes of the weights' gradients
  std::uint64_t largest_parameter = 0;  ///< the largest weight tensor
};

/// Bytes of a tensor's elements.
std::uint64_t tensorBytes(const torch::Tensor& tensor);

/// What the layer is given: the leaf itself, or a copy of it for a layer that writes into its
/// input (made before the timer starts; its backward only passes the gradient on to the leaf).
torch::Tensor layerInput(const ChainLayer& layer, const torch::Tensor& leaf);

/// One forward as a stage runs it, counted: its output (its graph kept for the backward), the
/// bytes alive after it beyond the output, of those the input itself, and the forward's peak
/// above what is alive after it.
struct CountedForward {
  torch::Tensor output;
  std::uint64_t activation = 0;
  std::uint64_t input_kept = 0;
  std::uint64_t forward_transient = 0;
};

/// The layer's forward on `input` as a stage runs it, counted. Its input is an intermediate (a
/// clone of a leaf that requires grad: a leaf would be held by its AccumulateGrad node whether
/// the layer saves it or not), dropped after the forward: freed unless the layer saved it. It is
/// allocated under the counter, as CPU frees are reported only for memory allocated while counting.
CountedForward countedForward(const ChainLayer& layer, const torch::Tensor& input, const torch::Tensor& target);

/// Bytes that a layer keeps alive for its backward when run on `input`: memory alive after its
/// forward, counting its own copy of the input (freed unless saved), minus its output.
std::uint64_t measureActivationBytes(const ChainLayer& layer, const torch::Tensor& input,
                                     const torch::Tensor& target);

/// A layer's memory from one counted forward and backward, the weights' gradients allocated
/// first (from a step's second microbatch on, the backward's new gradient is a temporary).
/// Everything but weight_pending, which the first B/W split of the rounds counts.
LayerMemoryBytes measureForwardBackwardMemory(const ChainLayer& layer, const CountedForward& forward,
                                              const torch::Tensor& upstream_grad);

/// What B allocates and keeps for W beyond the input's gradients it returns: `count` runs from
/// the split's set-up through B.
std::uint64_t pendingForWeights(const MemoryCounter& count, const std::vector<torch::Tensor>& input_grads);

/// What B keeps for W, counted alone on the leaf `input` (0 when it needs no gradient or the
/// layer has no weights): for a layer no round split (every sample resumed).
std::uint64_t measureWeightPending(const ChainLayer& layer, const torch::Tensor& input,
                                   const torch::Tensor& upstream_grad, const torch::Tensor& target);

}  // namespace stagecut
