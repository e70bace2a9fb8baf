#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/partition.h"
#include "core/profile.h"
#include "partitioner/partition_options.h"
#include "schedule/schedule_kind.h"

namespace stagecut {

/// One schedule's best split of a profile, as `compare` sets them side by side: the N-stage
/// pipeline under 1F1B and ZB-H1, interleaved 1F1B with v = 2, 3, 4 chunks per rank, ZB-V.
struct ScheduleChoice {
  ScheduleKind schedule = ScheduleKind::kOneFOneB;
  Placement placement;             ///< its ranks and chunks per rank
  std::optional<Partition> split;  ///< its best split
  bool exact = false;              ///< whether its slowest rank is proven optimal
  /// The schedule run on its split, through predictPipeline(): the simulated step and bubble and
  /// the fullest rank's peak memory.
  double step_ms = 0.0;
  double bubble = 0.0;
  double peak_bytes = 0.0;
  std::string left_out;            ///< why there is no split (the shape, a cap, a flag)
};

/// The best split of `profile` under each schedule of the comparison (1F1B, ZB-H1, interleaved
/// 1F1B with v = 2, 3, 4, ZB-V) for the pipeline `options` describes (N, M, caps, links, speeds,
/// rules): the N-stage ones as partitionProfile() splits them, the chunked ones as
/// partitionChunked() does, each then simulated under its own schedule. A schedule that cannot run the shape, a chunking that no cap admits,
/// or an option not modelled for chunks leaves its entry without a split and says why. Throws
/// Error (input) as partitionProfile() does for the N-stage pipeline.
std::vector<ScheduleChoice> bestSplitPerSchedule(const Profile& profile, const PartitionOptions& options,
                                                 const std::string& source);

/// Whether `split` is proven optimal, in the words compare and report print: "yes", or how far its
/// slowest rank may be above the proven lower bound ("<= 0.13% above").
std::string optimalityText(const Partition& split, bool exact);

/// `choices` as a comparison file keeps them (ComparisonDocument::schedules), each split with
/// the framework outputs `partition --schedule S` writes for it.
std::vector<ScheduleComparison> scheduleComparisons(const Profile& profile, const std::vector<ScheduleChoice>& choices);

}  // namespace stagecut
