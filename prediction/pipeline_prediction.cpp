#include "prediction/pipeline_prediction.h"

#include <map>

#include "core/error.h"
#include "core/partition_json.h"
#include "prediction/recompute.h"
#include "schedule/data_parallel.h"
#include "schedule/generators.h"

namespace stagecut {

namespace {

// Recomputation reruns a stage's forward before its backward and leaves a microbatch holding
// only what the stage keeps; a stage's speed divides all its op times.
RankAdjustments splitAdjustments(const Profile& profile, const Partition& partition,
                                 const PredictionOptions& options, const std::string& source,
                                 bool* recomputes, std::vector<RecomputeOption>* stage_options) {
  RankAdjustments adjustments;
  adjustments.speed = options.stage_speed;
  bool any = false;
  std::map<std::string, RecomputeOption> options_by_mode;  // each costs a pass over the layers
  for (std::size_t s = 0; s < partition.stages.size(); ++s) {
    const StageCost& stage = partition.stages[s];
    const std::string mode = stage.recompute.value_or("none");
    auto known = options_by_mode.find(mode);
    if (known == options_by_mode.end()) {
      try {
        known = options_by_mode.emplace(mode, stageRecomputeOption(profile, mode)).first;
      } catch (const Error& error) {
        throw Error(source + ": stage " + std::to_string(s) + ": " + error.what());
      }
    }
    const RecomputeOption& option = known->second;
    stage_options->push_back(option);
    adjustments.extra_backward_ms.push_back(stageRecomputeMs(option, stage.first, stage.last));
    adjustments.kept_activation_bytes.push_back(stageKeptBytes(profile, option, stage.first, stage.last));
    any = any || mode != "none";
  }
  if (!any) {
    adjustments.extra_backward_ms.clear();
    adjustments.kept_activation_bytes.clear();
  }
  *recomputes = any;
  return adjustments;
}

// The placement the schedule runs the split on: the options', or the split's own.
Placement runPlacement(const Partition& partition, const PredictionOptions& options, const std::string& source) {
  const Placement split = partition.rankPlacement();
  const Placement run = options.placement.value_or(split);
  if (run.ranks != split.ranks) {
    throw Error(source + ": the split is for " + std::to_string(split.ranks) + " ranks, the schedule runs " +
                std::to_string(run.ranks));
  }
  if (split.chunked() && run != split) {
    throw Error(source + ": the split places " + placementWords(split) + "; it runs only as placed, not on " +
                placementWords(run));
  }
  checkRunsPlacement(options.schedule, run, source);
  return run;
}

}  // namespace

Schedule pipelineSchedule(ScheduleKind kind, const Placement& placement, int microbatches, int data_parallel) {
  Schedule schedule = generateSchedule(kind, placement, microbatches);
  ringAllReduceCost(data_parallel, BoundaryLink{});  // the one check of D
  if (data_parallel > 1) schedule = withGradientAllReduce(schedule);
  return schedule;
}

PipelinePrediction predictPipeline(const Profile& profile, const Partition& partition,
                                   const PredictionOptions& options, const std::string& source) {
  checkPartitionCoversLayers(partition, profile.layerCount(), source);
  const Placement scheduled = runPlacement(partition, options, source);
  PipelinePrediction prediction;
  prediction.schedule = pipelineSchedule(options.schedule, scheduled, options.microbatches, 1);
  const PartitionCosts costs = costsFromPartition(profile, partition, scheduled, options.link, source);
  prediction.costs = costs.costs;
  prediction.layers_with_even_split = costs.layers_with_even_split;
  prediction.layers_with_w_from_backward = costs.layers_with_w_from_backward;
  std::vector<RecomputeOption> recompute;
  applyRankAdjustments(splitAdjustments(profile, partition, options, source, &prediction.recomputes, &recompute),
                       prediction.schedule.placement, &prediction.costs);
  if (options.data_parallel > 1) {
    prediction.pipeline_step_ms = simulate(prediction.schedule, prediction.costs).step_ms;
    prediction.schedule = withGradientAllReduce(prediction.schedule);
    prediction.costs.allreduce_ms =
        allReduceMsFromPartition(profile, partition, scheduled, options.data_parallel, options.dp_link);
  } else {
    ringAllReduceCost(options.data_parallel, options.dp_link);  // D < 1 is refused as everywhere
  }
  prediction.simulated = simulate(prediction.schedule, prediction.costs);
  if (options.data_parallel <= 1) prediction.pipeline_step_ms = prediction.simulated.step_ms;
  if (options.memory) {
    prediction.memory = predictMemory(profile, partition, prediction.schedule, recompute, options.optimizer);
  }
  return prediction;
}

PipelinePrediction predictUnitCosts(ScheduleKind kind, const Placement& placement, int microbatches) {
  PipelinePrediction prediction;
  prediction.schedule = pipelineSchedule(kind, placement, microbatches, 1);
  prediction.costs = unitCosts(prediction.schedule);
  prediction.simulated = simulate(prediction.schedule, prediction.costs);
  prediction.pipeline_step_ms = prediction.simulated.step_ms;
  return prediction;
}

}  // namespace stagecut
