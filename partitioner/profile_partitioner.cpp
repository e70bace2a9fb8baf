#include "partitioner/profile_partitioner.h"

#include <algorithm>

#include "core/error.h"
#include "partitioner/baselines.h"
#include "partitioner/exact_solver.h"
#include "partitioner/megatron_layout.h"
#include "partitioner/partition_summary.h"

namespace stagecut {

namespace {

// The rules leave `cuts` places to cut: more stages than cuts + 1 cannot be built.
void checkStagesUnderRules(const SplitRules& rules, int stages, int layers) {
  const int forbidden = static_cast<int>(std::count(rules.cut_allowed.begin(), rules.cut_allowed.end(), 0));
  const int most = layers - forbidden;
  if (stages <= most) return;
  throw Error("--stages " + std::to_string(stages) + ": " + ruleSetRunners(rules.set) + " can cut this chain of " +
              std::to_string(layers) + " layers into at most " + std::to_string(most) +
              " stages (the loss shares the last stage" +
              (rules.set == SplitRuleSet::kMegatron ? "; Megatron keeps E and L whole" : "") + "); use --stages " +
              std::to_string(most) + " or fewer, or --any-split for a runtime that runs any split");
}

// uniform and params as DeepSpeed computes them: over its layers, which end before the loss
// (its loss_fn runs on the last stage's output).
std::vector<int> baselineSplit(const Profile& profile, int stages, SplitMethod method) {
  const int layers = static_cast<int>(profile.layerCount());
  const int loss = trailingLossLayers(profile);
  const int modules = layers - loss >= stages ? layers - loss : layers;
  std::vector<int> counts;
  if (method == SplitMethod::kUniform) {
    counts = uniformSplit(modules, stages);
  } else {
    std::vector<std::uint64_t> params;
    for (int k = 0; k < modules; ++k) params.push_back(profile.layers[k].params);
    counts = deepspeedParamsSplit(params, stages);
  }
  counts.back() += layers - modules;
  return counts;
}

}  // namespace

const char* splitMethodName(SplitMethod method) {
  switch (method) {
    case SplitMethod::kUniform: return "uniform";
    case SplitMethod::kParams: return "params";
    case SplitMethod::kCompute: break;
  }
  return "compute";
}

Partition partitionProfile(const Profile& profile, const PartitionOptions& options,
                           const std::string& source, SplitMethod method) {
  const CostModel model = buildCostModel(profile, options, source);
  if (method != SplitMethod::kCompute) {
    return describeSplit(profile, options, model, baselineSplit(profile, model.stageCount(), method),
                         splitMethodName(method));
  }
  checkStagesUnderRules(resolvedSplitRules(profile, options), model.stageCount(), model.layerCount());
  const bool free = options.rules == SplitRuleSet::kAny;
  return describeSplit(profile, options, model, solveExactSplit(model), free ? kFreeMethod : "compute");
}

std::vector<Partition> partitionForComparison(const Profile& profile, const PartitionOptions& options,
                                              const std::string& source) {
  std::vector<Partition> splits;
  for (SplitMethod method : {SplitMethod::kUniform, SplitMethod::kParams, SplitMethod::kCompute}) {
    splits.push_back(partitionProfile(profile, options, source, method));
  }
  if (options.rules != SplitRuleSet::kAny) {
    PartitionOptions free = options;
    free.rules = SplitRuleSet::kAny;
    Partition optimum = partitionProfile(profile, free, source, SplitMethod::kCompute);
    if (optimum.layersPerStage() != splits.back().layersPerStage()) splits.push_back(std::move(optimum));
  }
  return splits;
}

const Partition& chosenSplit(const std::vector<Partition>& splits) {
  for (const Partition& split : splits) {
    if (split.method == "compute" || split.method == kFreeMethod) return split;
  }
  return splits.back();
}

std::vector<RuleSetSplit> ruleSetSplits(const Profile& profile, const PartitionOptions& options,
                                        const std::string& source) {
  std::vector<RuleSetSplit> rows;
  for (SplitRuleSet set : {SplitRuleSet::kMegatron, SplitRuleSet::kLossWithLast, SplitRuleSet::kAny}) {
    if (set == SplitRuleSet::kMegatron && !megatronInapplicability(profile).empty()) continue;
    RuleSetSplit row;
    row.rules = set;
    PartitionOptions restricted = options;
    restricted.rules = set;
    try {
      row.partition = partitionProfile(profile, restricted, source, SplitMethod::kCompute);
    } catch (const Error& error) {
      if (error.kind() != ErrorKind::kInput) throw;
      row.failure = error.what();
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

MegatronPartition partitionForMegatron(const Profile& profile, const PartitionOptions& options,
                                       const std::string& source, bool first_last) {
  const std::string why_not = megatronInapplicability(profile);
  if (!why_not.empty()) {
    throw Error("--format megatron: Megatron's layout does not apply to " + source + ": " + why_not +
                " (Megatron needs the embedding first and the loss last); use --format deepspeed, torchgpipe or list");
  }
  PartitionOptions megatron = options;
  megatron.rules = SplitRuleSet::kMegatron;
  MegatronPartition result;
  result.free_optimum = partitionProfile(profile, megatron, source, SplitMethod::kCompute);
  result.chosen = result.free_optimum;
  if (first_last) {
    const MegatronGroups groups = megatronGroups(profile);
    const CostModel model = buildCostModel(profile, megatron, source);
    const std::vector<int> counts = bestFlagsSplit(model, groups);
    if (counts.empty()) {
      throw Error("--megatron-first-last: no split Megatron's flags can express fits " +
                  std::to_string(groups.block_layers) + " transformer layers into " +
                  std::to_string(options.placement.ranks) + " stages" +
                  (options.memory_cap_bytes.empty() ? "" : " within --memory-cap") +
                  "; use --pipeline-model-parallel-layout (drop --megatron-first-last)");
    }
    result.chosen = describeSplit(profile, megatron, model, counts, "megatron-first-last");
    result.first_last = true;
  }
  return result;
}

}  // namespace stagecut
