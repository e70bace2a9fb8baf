#pragma once

#include <string>
#include <vector>

#include "core/partition.h"
#include "core/profile.h"
#include "partitioner/cost_model.h"
#include "partitioner/partition_options.h"

namespace stagecut {

/// Predicted step time of a pipeline whose stages cost `stage_cost_ms` per microbatch, ms:
/// sum(stage costs) + (M - 1) x bottleneck (docs/metrics.md).
double predictedStepMs(const std::vector<double>& stage_cost_ms, int microbatches);

/// Idle fraction of that step over all N ranks: 1 - M x sum(stage costs) / (N x step).
double predictedBubble(const std::vector<double>& stage_cost_ms, int microbatches);

/// The Partition record of a split given as layers per stage: per-stage forward, backward
/// (including recomputation), comm, cost, params and memory, the bottleneck, the lower bound,
/// the predicted step and bubble. `outputs` is left empty. Throws Error (input) when the counts
/// do not cover the profile with one non-empty stage per stage.
Partition describeSplit(const Profile& profile, const PartitionOptions& options,
                        const CostModel& model, const std::vector<int>& layers_per_stage,
                        const std::string& method);

}  // namespace stagecut
