#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/partition.h"
#include "core/profile.h"
#include "partitioner/partition_options.h"
#include "planner/sized_profile.h"

namespace stagecut {

/// What `stagecut plan` is asked: split a fixed global batch into microbatches of every size
/// that divides it, and find the fastest that fits memory.
struct PlanRequest {
  int global_batch = 0;          ///< G samples per step over all data-parallel replicas
  /// Schedule and placement (N ranks, chunks per rank), caps, links, optimizer, recomputation:
  /// the partitioner's options. `microbatches` is set per row.
  PartitionOptions partition;
  /// Interleaved 1F1B with no v given: every size tries v = 2, 3, 4 (placementsToTry()) and
  /// keeps the fastest that fits; otherwise it runs `partition.placement`.
  bool choose_chunks = false;
  double fit_tolerance = 0.1;  ///< largest relative residual of a layer's line before it is flagged
};

/// One microbatch size's figures: what stagecut.plan/1 holds of a row.
struct PlanRowFigures {
  int microbatch_size = 0;
  int microbatches = 0;  ///< M = G / (D b) per replica
  bool measured = false;  ///< costs measured at this size (else from the fitted curves)
  Placement placement;    ///< N ranks and v chunks per rank; a chunked schedule's split is its N x v chunks
  std::vector<int> layers_per_stage;  ///< the split's layer counts, per chunk when chunked
  double bottleneck_ms = 0.0;
  double step_ms = 0.0;
  double bubble = 0.0;
  std::vector<std::uint64_t> peak_memory_bytes;  ///< per stage (rank): state + activations at peak
  bool feasible = true;
  int overflow_stage = -1;  ///< the stage (rank) most over its cap, when not feasible
  std::uint64_t overflow_bytes = 0;
  double samples_per_s = 0.0;  ///< G / step time
};

/// One microbatch size: its best split, simulated step and memory.
struct PlanRow : PlanRowFigures {
  /// The equal-compute split for this size, as `partition` makes it for the schedule (N x v
  /// chunks for a chunked one); layers_per_stage counts its layers.
  Partition partition;
};

/// A size that divides G but was not planned, and why.
struct SkippedSize {
  int microbatch_size = 0;
  std::string reason;
};

/// The planner's answer: one row per planned size (ascending), the best feasible row.
struct MicrobatchPlan {
  PlanRequest request;
  std::vector<int> measured_sizes;
  std::vector<LayerFitReport> fits;
  std::vector<PlanRow> rows;
  std::vector<SkippedSize> skipped;
  int best = -1;  ///< index into rows of the fastest feasible row; -1 when none fits

  /// Layers whose costs a line does not fit (interpolated between measured sizes).
  std::vector<const LayerFitReport*> flaggedLayers() const;
};

/// Sweeps every microbatch size b dividing the G / D samples of a replica that the profile covers
/// (measured, or estimated from fitted lines up to twice the largest measured size): for each,
/// re-partitions for equal compute with M = G / (D b) (a chunked schedule into its own N x v
/// chunks, with `choose_chunks` the best of v = 2, 3, 4), simulates the schedule, and checks each
/// rank's memory against the caps. Throws Error (input) for G < 1, a G that D does not divide or
/// whose G / D no measured size divides, a schedule the planner does not know, or options the
/// partitioner rejects.
MicrobatchPlan planMicrobatches(const Profile& profile, const PlanRequest& request, const std::string& source);

/// Throws Error (input) when no row fits the memory caps, naming the fastest row's stage that
/// overflows and by how much.
void requireFeasibleRow(const MicrobatchPlan& plan);

}  // namespace stagecut
