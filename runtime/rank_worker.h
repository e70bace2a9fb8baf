#pragma once

#include <vector>

#include "runtime/gloo_transport.h"
#include "runtime/validation_types.h"

namespace stagecut {

/// Runs one rank of a validation: rebuilds its stage of the profile's model, meets the other
/// ranks, measures the links to its neighbours, runs the warm-up and measured steps of the
/// schedule, checks its gradients against a full-batch step of the unsplit model, and sends
/// its outcome to rank 0. Returns every rank's outcome on rank 0 and an empty list elsewhere.
/// Throws Error: kInput for a request that cannot run (sizes, files), kRuntime for failures of
/// the run (a peer lost, a timeout naming the op and the peer).
std::vector<RankOutcome> runValidationRank(const ValidateRequest& request, const RendezvousInfo& rendezvous);

}  // namespace stagecut
