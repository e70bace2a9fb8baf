#pragma once

#include <string>
#include <vector>

#include "core/partition.h"
#include "core/profile.h"
#include "prediction/stage_memory.h"
#include "schedule/pipeline_schedule.h"

namespace stagecut {

/// One rank's predicted memory over a step: its chunks' terms, the bytes at the peak of each of its ops
/// and of the optimizer step that ends the step, and the largest of them with its parts.
struct RankMemory {
  std::vector<StageMemoryTerms> terms;  ///< per local chunk (one for an N-stage pipeline)
  std::vector<double> op_peak_bytes;  ///< per op of the rank's list, in order
  double optimizer_step_bytes = 0.0;
  double peak_bytes = 0.0;
  /// The op at the peak: an index into the rank's ops, or their count for the optimizer step.
  int peak_op = 0;
  MemoryParts peak_parts;
};

/// Every rank's memory over a step, and the profile fields the prediction lacked.
struct MemoryPrediction {
  std::vector<RankMemory> ranks;
  std::vector<std::string> missing_fields;  ///< missingMemoryFields(profile)
};

/// The memory timeline of `schedule` (its op lists; all-reduce ops included) on `partition`:
/// each rank's chunks as the partition places them (an N-stage split under a schedule of v chunks
/// per rank: 1 / v of stage s on each of rank s's chunks), each stage's recomputation (`recompute[s]`, over the whole chain's
/// layers; empty: none) and the optimizer's state and step. `partition` must cover the profile
/// (predictPipeline checks).
MemoryPrediction predictMemory(const Profile& profile, const Partition& partition, const Schedule& schedule,
                               const std::vector<RecomputeOption>& recompute, const OptimizerMemory& optimizer);

/// The peak bytes of a stage of `terms` over `states` (rankMemoryStates or peakCandidates).
double peakMemoryBytes(const std::vector<MemoryState>& states, const StageMemoryTerms& terms, int* at = nullptr);

}  // namespace stagecut
