#pragma once

#include "core/profile.h"
#include "profiler/layer_chain.h"
#include "profiler/profile_request.h"
#include "profiler/region_timer.h"

namespace stagecut {

/// Measures every layer of `chain` on one seeded microbatch: forward, whole backward, input-grad
/// (B) and weight-grad (W) backward apart, parameters, output and activation bytes; and the whole
/// model, interleaved round by round with the layers. Fills `layers` and `whole_model` of the
/// returned profile and the model and run metadata it knows; the caller adds the device.
Profile measureLayerChain(const LayerChain& chain, const MeasureOptions& options, RegionTimer& timer);

/// Bytes that a layer keeps alive for its backward when run on `input`: memory alive after its
/// forward, counting its own copy of the input (freed unless saved), minus its output. Measured
/// with MemoryCounter.
std::uint64_t measureActivationBytes(const ChainLayer& layer, const torch::Tensor& input,
                                     const torch::Tensor& target);

}  // namespace stagecut
