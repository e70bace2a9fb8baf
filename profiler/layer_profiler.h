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

}  // namespace stagecut
