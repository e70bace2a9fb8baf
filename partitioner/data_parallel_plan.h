#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/profile.h"
#include "partitioner/partition_options.h"
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
  int chunks = 2;        ///< v of interleaved-1f1b
  std::vector<ScheduleKind> schedules = {ScheduleKind::kOneFOneB};
  BoundaryLink pipeline_link;  ///< between stages
  BoundaryLink dp_link;        ///< of the gradient all-reduce
  /// Optimizer state, recompute and the like for the partitioner; stages, microbatches,
  /// schedule and data parallelism are set per layout.
  PartitionOptions partition;
};

/// One layout of the trade-off, split by the exact partitioner (which charges the exposed
/// all-reduce) and simulated with the gradient all-reduce ops.
struct TradeoffRow {
  std::string schedule;
  int stages = 0;        ///< N
  int replicas = 0;      ///< D
  int microbatches = 0;  ///< M per replica
  std::vector<int> layers_per_stage;
  double step_ms = 0.0;
  double bubble = 0.0;                ///< idle fraction of the N x D devices' compute
  double allreduce_ms = 0.0;          ///< the slowest stage's all-reduce
  double exposed_allreduce_ms = 0.0;  ///< step minus the same step without all-reduce
  double samples_per_s = 0.0;         ///< M x D x microbatch size / step
  std::uint64_t peak_memory_bytes = 0;  ///< the fullest stage's memory (partition model)
  std::vector<std::string> recompute;   ///< per stage, its recompute mode
};

/// The rows, and notes on layouts left out (N above the layer count, a global batch that does
/// not divide, interleaved-1f1b with M not a multiple of N, no split within the memory caps).
struct Tradeoff {
  int microbatch_size = 0;  ///< samples per microbatch: the profile's run.microbatch_size
  std::vector<TradeoffRow> rows;
  std::vector<std::string> notes;
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
