#pragma once

#include <string>
#include <vector>

#include "core/profile.h"
#include "partitioner/partition_options.h"
#include "prediction/simulation_json.h"  // Tradeoff, TradeoffRow: the stagecut.simulation/1 rows
#include "schedule/profile_costs.h"
#include "schedule/schedule_kind.h"

namespace stagecut {

/// What `stagecut simulate PROFILE --ranks R` compares: every way to lay R ranks out as N
/// pipeline stages x D data-parallel replicas.
struct TradeoffOptions {
  int ranks = 8;
  /// Samples per step over all replicas; 0: every layout runs `microbatches` per replica.
  int global_batch = 0;
  int microbatches = 8;  ///< M per replica when global_batch is 0
  std::vector<ScheduleKind> schedules = {ScheduleKind::kOneFOneB};
  BoundaryLink pipeline_link;  ///< between stages
  BoundaryLink dp_link;        ///< of the gradient all-reduce
  /// Optimizer state, recompute and the like for the partitioner; microbatches, schedule and
  /// data parallelism are set per layout, and the placement's ranks (its chunks per rank are
  /// interleaved-1f1b's).
  PartitionOptions partition;
};

/// Every N x D = ranks with N <= the profile's layers, per schedule: M per replica is
/// global_batch / (D x microbatch size) (or `microbatches`), the split the exact optimum for
/// that N and D (under `partition`'s memory caps and recompute policy), the step simulated.
/// Throws Error (input) naming the flag for ranks < 1, a global batch < 1 or one that no layout
/// divides, no layout within the memory caps, a profile without its microbatch size (with a
/// global batch), and as partitionProfile() and simulate() do.
Tradeoff dataParallelTradeoff(const Profile& profile, const TradeoffOptions& options,
                              const std::string& source);

}  // namespace stagecut
