#include "partitioner/partition_summary.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "partitioner/split_score.h"

namespace stagecut {

double predictedStepMs(const std::vector<double>& stage_cost_ms, int microbatches) {
  double sum = 0.0, bottleneck = 0.0;
  for (double cost : stage_cost_ms) {
    sum += cost;
    bottleneck = std::max(bottleneck, cost);
  }
  return sum + (microbatches - 1) * bottleneck;
}

double predictedBubble(const std::vector<double>& stage_cost_ms, int microbatches) {
  const double step_ms = predictedStepMs(stage_cost_ms, microbatches);
  if (!(step_ms > 0)) return 0.0;
  double sum = 0.0;
  for (double cost : stage_cost_ms) sum += cost;
  const double stages = static_cast<double>(stage_cost_ms.size());
  return 1.0 - microbatches * sum / (stages * step_ms);
}

std::vector<StageRecompute> describeRecompute(const CostModel& model,
                                              const std::vector<int>& layers_per_stage) {
  // The same stages without recomputation: what each mode saves and what it adds.
  ChainCosts plain = model.costs();
  plain.recompute_options.clear();
  plain.gradient_bytes.clear();
  const CostModel plain_model(std::move(plain));
  std::vector<StageRecompute> result;
  int first = 0;
  for (int s = 0; s < static_cast<int>(layers_per_stage.size()); ++s) {
    const int last = first + layers_per_stage[s] - 1;
    const int choice = std::max(0, model.recomputeChoice(s, first, last));
    StageRecompute stage;
    stage.mode = model.recomputeName(choice);
    stage.extra_ms = model.recomputeExtraMs(choice, first, last);
    stage.memory_bytes_without = plain_model.memoryBytes(s, first, last);
    stage.memory_bytes_with = model.optionMemoryBytes(choice, s, first, last);
    stage.allreduce_ms = model.allReduceMs(first, last);
    stage.exposed_allreduce_ms = model.exposedAllReduceMs(s, first, last);
    result.push_back(stage);
    first = last + 1;
  }
  return result;
}

Partition describeSplit(const Profile& profile, const PartitionOptions& options,
                        const CostModel& model, const std::vector<int>& layers_per_stage,
                        const std::string& method) {
  checkSplitShape(layers_per_stage, model.layerCount(), model.stageCount(), method.c_str());
  Partition partition;
  partition.method = method;
  std::vector<double> costs;
  int first = 0;
  for (int s = 0; s < model.stageCount(); ++s) {
    StageCost stage;
    stage.first = first;
    stage.last = first + layers_per_stage[s] - 1;
    for (int k = stage.first; k <= stage.last; ++k) {
      const LayerCost& layer = profile.layers[k];
      stage.forward_ms += layer.forward_ms.median;
      stage.backward_ms += layer.backward_ms.median;
      stage.params += layer.params;
    }
    // Recomputation reruns the forward inside the backward pass.
    const int choice = std::max(0, model.recomputeChoice(s, stage.first, stage.last));
    stage.backward_ms += model.recomputeExtraMs(choice, stage.first, stage.last);
    stage.comm_ms = model.commInMs(stage.first) + model.commOutMs(stage.last);
    stage.cost_ms = model.stageCostMs(s, stage.first, stage.last);
    stage.memory_bytes = static_cast<std::uint64_t>(std::llround(model.memoryBytes(s, stage.first, stage.last)));
    if (std::optional<MemoryParts> parts = model.memoryParts(s, stage.first, stage.last)) {
      // Whole bytes, as the partition file holds them.
      for (double* part : {&parts->weights, &parts->gradients, &parts->optimizer, &parts->activations,
                           &parts->buffers, &parts->transient}) {
        *part = std::round(*part);
      }
      stage.memory_parts = parts;
    }
    // The split's own choices travel with it, so that every later prediction charges them.
    if (options.recompute.mode != RecomputePolicy::Mode::kNone) {
      stage.recompute = model.recomputeName(choice);
      stage.recompute_ms = model.recomputeExtraMs(choice, stage.first, stage.last);
    }
    if (options.data_parallel > 1) {
      stage.allreduce_ms = model.allReduceMs(stage.first, stage.last);
      stage.exposed_allreduce_ms = model.exposedAllReduceMs(s, stage.first, stage.last);
    }
    costs.push_back(stage.cost_ms);
    partition.bottleneck_ms = std::max(partition.bottleneck_ms, stage.cost_ms);
    partition.stages.push_back(stage);
    first = stage.last + 1;
  }
  partition.lower_bound_ms = bottleneckLowerBoundMs(model);
  partition.predicted_step_ms = predictedStepMs(costs, options.microbatches);
  partition.predicted_bubble = predictedBubble(costs, options.microbatches);
  return partition;
}

}  // namespace stagecut
