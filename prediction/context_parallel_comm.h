#pragma once

// A context-parallel rank's key/value exchange as time. A profile measured at CP c records (not
// yet one stagecut profile makes), per layer, how many ring steps its forward and backward pass and the bytes each moves
// (LayerCost::cp_exchange). Megatron runs the ring's point-to-point sends beside the attention
// of the chunk already at hand, so a step's exchange hides behind the layer's compute: what is
// charged is the part of the exchange longer than the op it overlaps.

#include "core/profile.h"
#include "schedule/profile_costs.h"

namespace stagecut {

/// ms of a layer's exchange in its forward and in its backward on `link` (each ring step one
/// message of cp_exchange.bytes), before any overlap; {0, 0} for a layer without one.
std::pair<double, double> contextParallelExchangeMs(const LayerCost& layer, const BoundaryLink& link);

/// Adds to each layer's forward and backward (and B) the part of its exchange that its own
/// compute does not hide (every measured microbatch size's too). Does nothing for a profile
/// without exchanges or with a free link.
void priceContextParallelExchange(Profile& profile, const BoundaryLink& link);

}  // namespace stagecut
