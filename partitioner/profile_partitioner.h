#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/partition.h"
#include "core/profile.h"
#include "partitioner/partition_options.h"

namespace stagecut {

/// How a split is chosen: "compute" (the exact optimum under options.rules, by default one
/// every printed framework runs), "uniform" (equal layer counts, as DeepSpeed's
/// partition_method="uniform" places the remainder) or "params" (DeepSpeed's parameter
/// balancing). uniform and params split the layers DeepSpeed partitions: the loss is its
/// loss_fn, on the last stage.
enum class SplitMethod { kCompute, kUniform, kParams };

/// "compute", "uniform" or "params".
const char* splitMethodName(SplitMethod method);

/// The method name of the exact optimum without framework rules.
inline constexpr const char* kFreeMethod = "free";

/// Splits a profile by `method` and describes the result: stage costs, bottleneck, lower bound,
/// predicted step and bubble. `source` names the profile in messages. Throws Error (input) for
/// bad options (see buildCostModel) and, for "compute", when the rules allow fewer stages or
/// no split fits the memory caps. With options.rules = kAny, "compute" is named kFreeMethod.
Partition partitionProfile(const Profile& profile, const PartitionOptions& options,
                           const std::string& source, SplitMethod method);

/// The splits `stagecut compare`, the report and the demo set side by side: uniform, params and
/// compute, in that order, each as partitionProfile() makes it, then the free optimum where the
/// frameworks' rules cost something (its split differs). Throws as partitionProfile.
std::vector<Partition> partitionForComparison(const Profile& profile, const PartitionOptions& options,
                                              const std::string& source);

/// The split the others of a comparison are measured against: "compute" (or the free optimum
/// when the comparison was made with any split allowed), else the last one.
const Partition& chosenSplit(const std::vector<Partition>& splits);

/// The exact optimum under one rule set, or why there is none.
struct RuleSetSplit {
  SplitRuleSet rules = SplitRuleSet::kAny;
  std::optional<Partition> partition;  ///< method "compute" ("free" for kAny)
  std::string failure;                 ///< the Error's message when there is no split
};

/// The exact optimum under each rule set that applies to the chain: megatron (where it
/// applies), loss-with-last, then any (the free optimum). Other options as given.
std::vector<RuleSetSplit> ruleSetSplits(const Profile& profile, const PartitionOptions& options,
                                        const std::string& source);

/// A split Megatron-LM can take, and what the restriction costs.
struct MegatronPartition {
  Partition chosen;        ///< the split to use (method "compute" or "megatron-first-last")
  Partition free_optimum;  ///< the best split under Megatron's rules without the flags' restriction
  bool first_last = false; ///< whether `chosen` was restricted to the flags
};

/// Partitions under Megatron's rules (the embedding on the first stage, norm/head/loss together
/// on the last), so the result has a layout string; with `first_last`, only among splits
/// Megatron's flags can express (megatronFlags). Throws Error (input) as partitionProfile, when
/// Megatron's layout does not apply to the chain, and when no flags split exists or fits.
MegatronPartition partitionForMegatron(const Profile& profile, const PartitionOptions& options,
                                       const std::string& source, bool first_last);

}  // namespace stagecut
