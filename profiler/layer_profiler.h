#pragma once

#include "core/profile.h"
#include "profiler/layer_chain.h"
#include "profiler/profile_request.h"
#include "profiler/region_timer.h"

namespace stagecut {

/// Measures every layer of `chain` on one seeded microbatch: forward, whole backward, input-grad
/// (B) and weight-grad (W) backward apart, parameters, output and activation bytes; and the whole
/// model. Each round is one pass of the whole model that times every layer in it in the order a
/// stage runs them (each forward after its predecessor's, each backward after its successor's,
/// B and W split off right after); a layer outside the whole-model window is timed alone in the
/// same rounds. Fills `layers` and `whole_model` of the
/// returned profile and the model and run metadata it knows; the caller adds the device.
/// Layers not built (a described chain, describeZooModel) are built when needed and released
/// after, so that the whole model is never in memory at once unless it fits: the whole-model
/// check then times the longest window of consecutive layers that fits options.window_bytes
/// (whole_model.window). Layers built on entry stay built.
Profile measureLayerChain(LayerChain& chain, const MeasureOptions& options, RegionTimer& timer);

/// For each layer of `chain`, the layers whose timings it takes instead of being timed: of 4 or
/// more layers with one non-empty signature, the first, the middle and the last (in chain order)
/// are timed and the others take their samples; empty for a layer timed itself.
/// All empty with `time_every_layer`.
std::vector<std::vector<int>> identicalLayerSamples(const LayerChain& chain, bool time_every_layer);

/// Bytes that a layer keeps alive for its backward when run on `input`: memory alive after its
/// forward, counting its own copy of the input (freed unless saved), minus its output. Measured
/// with MemoryCounter.
std::uint64_t measureActivationBytes(const ChainLayer& layer, const torch::Tensor& input,
                                     const torch::Tensor& target);

/// What one layer's memory needs on `input`, bytes per microbatch, measured with MemoryCounter
/// (on one layer of each group of identical ones, on the way to the first round's inputs; W's
/// share at the layer's first B/W split) as a pipeline stage runs it (the input allocated before, by the stage; the weights' gradients
/// allocated, as from the second microbatch of a step on). The profile's memory fields.
struct LayerMemoryBytes {
  std::uint64_t activation = 0;         ///< measureActivationBytes
  std::uint64_t input_kept = 0;         ///< of `activation`, the input itself
  std::uint64_t forward_transient = 0;  ///< peak of the forward above what is alive after it
  std::uint64_t backward_transient = 0; ///< peak of the backward above what was alive before it
  std::uint64_t weight_pending = 0;     ///< what a B/W split's B keeps for W, beyond the input's gradient
  std::uint64_t gradients = 0;          ///< bytes of the weights' gradients
  std::uint64_t largest_parameter = 0;  ///< the largest weight tensor
};

}  // namespace stagecut
