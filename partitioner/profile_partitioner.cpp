#include "partitioner/profile_partitioner.h"

#include "core/error.h"
#include "partitioner/baselines.h"
#include "partitioner/exact_solver.h"
#include "partitioner/megatron_layout.h"
#include "partitioner/partition_summary.h"

namespace stagecut {

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
  std::vector<int> counts;
  if (method == SplitMethod::kUniform) {
    counts = uniformSplit(model.layerCount(), model.stageCount());
  } else if (method == SplitMethod::kParams) {
    std::vector<std::uint64_t> params;
    for (const LayerCost& layer : profile.layers) params.push_back(layer.params);
    counts = deepspeedParamsSplit(params, model.stageCount());
  } else {
    counts = solveExactSplit(model);
  }
  return describeSplit(profile, options, model, counts, splitMethodName(method));
}

std::vector<Partition> partitionForComparison(const Profile& profile, const PartitionOptions& options,
                                              const std::string& source) {
  std::vector<Partition> splits;
  for (SplitMethod method : {SplitMethod::kUniform, SplitMethod::kParams, SplitMethod::kCompute}) {
    splits.push_back(partitionProfile(profile, options, source, method));
  }
  return splits;
}

MegatronPartition partitionForMegatron(const Profile& profile, const PartitionOptions& options,
                                       const std::string& source, bool first_last) {
  const MegatronGroups groups = megatronGroups(profile);
  const Profile view = megatronView(profile, groups);
  checkStageCount(options.stages, view.layerCount());
  const CostModel view_model = buildCostModel(view, options, source);
  const CostModel model = buildCostModel(profile, options, source);

  MegatronPartition result;
  const std::vector<int> free_counts = fromMegatronView(solveExactSplit(view_model), groups);
  result.free_optimum = describeSplit(profile, options, model, free_counts, "compute");
  result.chosen = result.free_optimum;
  if (first_last) {
    MegatronGroups view_groups = groups;
    view_groups.embedding_layers = groups.embedding_layers > 0 ? 1 : 0;
    view_groups.loss_layers = groups.loss_layers > 0 ? 1 : 0;
    const std::vector<int> view_counts = bestFirstLastSplit(view_model, view_groups);
    if (view_counts.empty()) {
      throw Error("--megatron-first-last: no split with equal middle stages fits " +
                  std::to_string(groups.block_layers) + " transformer layers into " +
                  std::to_string(options.stages) + " stages" +
                  (options.memory_cap_bytes.empty() ? "" : " within --memory-cap") +
                  "; use --pipeline-model-parallel-layout (drop --megatron-first-last)");
    }
    const std::vector<int> counts = fromMegatronView(view_counts, groups);
    result.chosen = describeSplit(profile, options, model, counts, "megatron-first-last");
    result.first_last = true;
  }
  return result;
}

}  // namespace stagecut
