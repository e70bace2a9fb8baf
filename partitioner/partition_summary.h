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

/// How one stage of a split keeps its activations, and its data-parallel all-reduce.
struct StageRecompute {
  std::string mode = "none";  ///< the recompute option the stage takes: none, full, selective:...
  double extra_ms = 0.0;      ///< extra forward per microbatch, ms
  /// Stage memory (state + activations in flight) without recomputation and with the mode, bytes.
  double memory_bytes_without = 0.0;
  double memory_bytes_with = 0.0;
  double allreduce_ms = 0.0;          ///< gradient all-reduce per step, ms (0 with D = 1)
  double exposed_allreduce_ms = 0.0;  ///< the part not hidden behind later stages' cool-down

  /// Memory the mode saves, bytes.
  double savedBytes() const { return memory_bytes_without - memory_bytes_with; }
};

/// Per stage of a split (layers per stage, already checked): its recompute choice, memory saved
/// against compute added, and its all-reduce.
std::vector<StageRecompute> describeRecompute(const CostModel& model,
                                              const std::vector<int>& layers_per_stage);

/// The Partition record of a split given as layers per stage: per-stage forward, backward
/// (including recomputation), comm, cost, params and memory, the bottleneck, the lower bound,
/// the predicted step and bubble. `outputs` is left empty. Throws Error (input) when the counts
/// do not cover the profile with one non-empty stage per stage.
Partition describeSplit(const Profile& profile, const PartitionOptions& options,
                        const CostModel& model, const std::vector<int>& layers_per_stage,
                        const std::string& method);

}  // namespace stagecut
