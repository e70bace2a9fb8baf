#pragma once

#include <cstdint>
#include <vector>

#include "schedule/pipeline_schedule.h"

namespace stagecut {

/// What one model stage's ops cost per microbatch, in ms (or unit slots), and the activation
/// memory a microbatch keeps alive on it between its forward and its (weight) backward.
struct StageOpCosts {
  double forward_ms = 1.0;
  double backward_ms = 2.0;         ///< B where W is not split off: the whole backward
  double backward_input_ms = 1.0;   ///< B where W is split off: the input gradient only
  double backward_weight_ms = 1.0;  ///< W: the weight gradient
  std::uint64_t activation_bytes = 0;
};

/// The costs the simulator runs a schedule on: one entry per model stage (N * v, in chain
/// order, model stage c * N + r being rank r's chunk c), and the transfer time of each boundary.
struct PipelineCosts {
  std::vector<StageOpCosts> stages;
  /// comm_ms[s]: time for model stage s's output to reach stage s + 1, and for its gradient to
  /// come back, when the two run on different ranks. Empty means no communication; otherwise
  /// one entry per boundary (N * v - 1).
  std::vector<double> comm_ms;
  /// allreduce_ms[s]: time of model stage s's data-parallel gradient all-reduce, the A op of
  /// its chunk (see schedule/data_parallel.h). Empty: all-reduce ops take 0; otherwise one
  /// entry per model stage (N * v).
  std::vector<double> allreduce_ms;
};

/// The lesson's unit costs for a schedule's N * v model stages: each rank does F = 1, B = 1 and
/// W = 1 per microbatch (an unsplit backward B + W = 2), divided evenly among its v chunks;
/// no communication. So every schedule does the same work per rank and their steps compare.
PipelineCosts unitCosts(const Schedule& schedule);

/// Costs from per-stage times, the partitioner's view: stage s takes forward_ms[s] and
/// backward_ms[s] (whole backward; split evenly into B and W for schedules that split it), and
/// every boundary takes comm_ms. Throws Error (input) when the vectors differ in size, are
/// empty, or hold negative or non-finite times.
PipelineCosts costsFromStageTimes(const std::vector<double>& forward_ms,
                                  const std::vector<double>& backward_ms, double comm_ms);

/// What a split's own model charges each rank beyond its layers' medians. Empty vectors leave
/// the costs as they are.
struct RankAdjustments {
  /// Activation recomputation: the extra forward a rank runs before each backward, ms per
  /// microbatch, and the activation bytes a microbatch then keeps on it; one per rank (shared
  /// evenly by its chunks) or, for a chunked split, one per model stage.
  std::vector<double> extra_backward_ms;
  std::vector<std::uint64_t> kept_activation_bytes;
  std::vector<double> speed;  ///< the rank's device speed relative to the profiled one
};

/// Applies the adjustments to costs of the N * v model stages `placement` puts on ranks (a
/// rank's extra time and kept bytes given per rank are shared evenly by its v chunks, and its
/// speed divides all its op times). Throws Error (input) when a non-empty vector has neither N
/// entries nor (recomputation) N * v, or the costs do not have N * v model stages.
void applyRankAdjustments(const RankAdjustments& adjustments, const Placement& placement, PipelineCosts* costs);

/// Checks that `costs` fit `schedule` (one entry per model stage, N * v - 1 boundaries or none,
/// N * v all-reduce times or none) and hold finite times >= 0. Throws Error (input) naming the stage and the field otherwise.
void checkCostsFit(const Schedule& schedule, const PipelineCosts& costs);

}  // namespace stagecut
