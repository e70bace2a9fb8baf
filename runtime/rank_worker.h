#pragma once

#include <vector>

#include "runtime/rank_world.h"
#include "runtime/validation_types.h"

namespace stagecut {

/// Runs one rank of a validation in `world` (its layout says which rank): rebuilds its stage of
/// the profile's model, connects the world, measures the links to its neighbours (and to its
/// replicas, with data parallelism), runs the warm-up and measured steps of the schedule on its
/// replica's shard of the batch (then again checkpointed, with request.recompute "full"), checks
/// its gradients against a full-batch step of the unsplit model over all shards, and publishes its
/// outcome in the world's store. Every wait and time goes through the world (transport, replica
/// group, store, clock), so the ranks may be processes over Gloo or threads of one process.
/// Process-wide settings are the caller's: pinThreads(request.threads) and retainFreedMemory()
/// (profiler/torch_runtime.h) before the first rank, once per process.
/// Returns every rank's outcome on rank 0 (in global rank order) and an empty list elsewhere.
/// Throws Error: kInput for a request that cannot run (sizes, files), kRuntime for failures of
/// the run (a peer lost, a timeout naming the op and the peer).
std::vector<RankOutcome> runValidationRank(const ValidateRequest& request, RankWorld& world);

}  // namespace stagecut
