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

}  // namespace

Schedule pipelineSchedule(ScheduleKind kind, int stages, int microbatches, int chunks, int data_parallel) {
  Schedule schedule = generateSchedule(kind, stages, microbatches, chunksPerRank(kind, chunks));
  ringAllReduceCost(data_parallel, BoundaryLink{});  // the one check of D
  if (data_parallel > 1) schedule = withGradientAllReduce(schedule);
  return schedule;
}

PipelinePrediction predictPipeline(const Profile& profile, const Partition& partition,
                                   const PredictionOptions& options, const std::string& source) {
  checkPartitionCoversLayers(partition, profile.layerCount(), source);
  const Placement placement = partition.rankPlacement();
  const int stages = placement.ranks;
  if (placement.chunked() && !runsChunks(options.schedule)) {
    throw Error(source + ": the split places " + std::to_string(placement.chunks_per_rank) +
                " chunks on each rank; " + scheduleName(options.schedule) +
                " runs one; use --schedule " + schedulesRunningChunks(placement.style));
  }
  const Placement scheduled =
      schedulePlacement(options.schedule, stages, placement.chunked() ? placement.chunks_per_rank : options.chunks);
  const int chunks = scheduled.chunks_per_rank;
  PipelinePrediction prediction;
  prediction.schedule = pipelineSchedule(options.schedule, stages, options.microbatches, chunks, 1);
  const PartitionCosts costs = costsFromPartition(profile, partition, scheduled, options.link, source);
  prediction.costs = costs.costs;
  prediction.layers_with_even_split = costs.layers_with_even_split;
  prediction.layers_with_w_from_backward = costs.layers_with_w_from_backward;
  std::vector<RecomputeOption> recompute;
  applyRankAdjustments(splitAdjustments(profile, partition, options, source, &prediction.recomputes, &recompute),
                       prediction.schedule.placement(), &prediction.costs);
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

PipelinePrediction predictUnitCosts(ScheduleKind kind, int stages, int microbatches, int chunks) {
  PipelinePrediction prediction;
  prediction.schedule = pipelineSchedule(kind, stages, microbatches, chunks, 1);
  prediction.costs = unitCosts(prediction.schedule);
  prediction.simulated = simulate(prediction.schedule, prediction.costs);
  prediction.pipeline_step_ms = prediction.simulated.step_ms;
  return prediction;
}

}  // namespace stagecut
