#pragma once

#include <vector>

#include "runtime/gloo_transport.h"
#include "runtime/validation_types.h"

namespace stagecut {

/// Runs one rank of a validation: rebuilds its stage of the profile's model, meets the other
/// ranks, measures the links to its neighbours (and to its replicas, with data parallelism),
/// runs the warm-up and measured steps of the schedule on its replica's shard of the batch
/// (then again checkpointed, with request.recompute "full"), checks its gradients against a
/// full-batch step of the unsplit model over all shards, and sends its outcome to rank 0.
/// Returns every rank's outcome on rank 0 (in global rank order) and an empty list elsewhere.
/// Throws Error: kInput for a request that cannot run (sizes, files), kRuntime for failures of
/// the run (a peer lost, a timeout naming the op and the peer).
std::vector<RankOutcome> runValidationRank(const ValidateRequest& request, const RendezvousInfo& rendezvous);

}  // namespace stagecut
