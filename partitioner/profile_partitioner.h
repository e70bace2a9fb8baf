#pragma once

#include <string>
#include <vector>

#include "core/partition.h"
#include "core/profile.h"
#include "partitioner/partition_options.h"

namespace stagecut {

/// How a split is chosen: "compute" (the exact optimum), "uniform" (equal layer counts, as
/// DeepSpeed and Megatron place the remainder) or "params" (DeepSpeed's parameter balancing).
enum class SplitMethod { kCompute, kUniform, kParams };

/// "compute", "uniform" or "params".
const char* splitMethodName(SplitMethod method);

/// Splits a profile by `method` and describes the result: stage costs, bottleneck, lower bound,
/// predicted step and bubble, and the framework outputs that can express it. `source` names the
/// profile in messages. Throws Error (input) for bad options (see buildCostModel) and, for
/// "compute", when no split fits the memory caps.
Partition partitionProfile(const Profile& profile, const PartitionOptions& options,
                           const std::string& source, SplitMethod method);

/// The splits `stagecut compare`, the report and the demo set side by side: uniform, params and
/// compute, in that order (the optimum last), each as partitionProfile() makes it. Throws as
/// partitionProfile.
std::vector<Partition> partitionForComparison(const Profile& profile, const PartitionOptions& options,
                                              const std::string& source);

/// A split Megatron-LM can take, and what the restriction costs.
struct MegatronPartition {
  Partition chosen;        ///< the split to use (method "compute" or "megatron-first-last")
  Partition free_optimum;  ///< the best split of the same Megatron view without restriction
  bool first_last = false; ///< whether `chosen` was restricted to the first/last flags
};

/// Partitions the Megatron view of the profile (embedding layers kept together on the first
/// stage, norm/head/loss layers together on the last), so the result has a layout string; with
/// `first_last`, only among splits --decoder-first/last-pipeline-num-layers can express.
/// Throws Error (input) as partitionProfile, and when no first/last split exists or fits.
MegatronPartition partitionForMegatron(const Profile& profile, const PartitionOptions& options,
                                       const std::string& source, bool first_last);

}  // namespace stagecut
