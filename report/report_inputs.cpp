#include "report/report_inputs.h"

#include <cmath>
#include <ctime>

#include "core/error.h"
#include "core/json_document.h"
#include "core/partition_json.h"
#include "partitioner/profile_partitioner.h"
#include "partitioner/schedule_choices.h"
#include "prediction/pipeline_prediction.h"
#include "schedule/generators.h"
#include "schedule/svg_gantt.h"

namespace stagecut {

namespace {

void simulateSchedules(ReportInputs* inputs, const ReportScheduleOptions& options) {
  const int stages = inputs->chosen.rankPlacement().ranks;
  const std::vector<PlacedSchedule> runs =
      options.runs.empty() ? placeSchedules(allScheduleKinds(), stages, std::nullopt) : options.runs;
  for (const auto& [kind, placement] : runs) {
    const std::string name = scheduleName(kind);
    std::string count_problem = microbatchCountProblem(kind, stages, inputs->microbatches);
    if (count_problem.empty() && needsMicrobatchesPerStageGroup(kind) && stages < 2) {
      count_problem = "needs 2 or more stages to interleave";
    }
    if (!count_problem.empty()) {
      inputs->notes.push_back(scheduleDisplayName(name) + " is not shown: it " + count_problem);
      continue;
    }
    PredictionOptions prediction;
    prediction.schedule = kind;
    prediction.microbatches = inputs->microbatches;
    prediction.placement = placement;
    prediction.stage_speed = options.stage_speed;
    prediction.data_parallel = options.data_parallel;
    prediction.link = options.link;
    prediction.dp_link = options.dp_link;
    PipelinePrediction predicted = predictPipeline(inputs->profile, inputs->chosen, prediction, inputs->profile_source);
    if (predicted.schedule.placement.chunks_per_rank > 1) {
      inputs->notes.push_back(scheduleDisplayName(name) + " divides each stage's costs evenly into its " +
                              std::to_string(predicted.schedule.placement.chunks_per_rank) + " chunks: the split fixes each rank's " +
                              "work, not the chunk layout");
    }
    if (predicted.schedule.splits_backward && predicted.layers_with_even_split > 0) {
      inputs->notes.push_back(std::to_string(predicted.layers_with_even_split) + " of " +
                              std::to_string(inputs->profile.layerCount()) +
                              " layers have no separate B and W times; " +
                              scheduleDisplayName(name) + " splits their backward evenly");
    }
    ReportSchedule run;
    run.schedule = std::move(predicted.schedule);
    run.result = std::move(predicted.simulated);
    inputs->schedules.push_back(std::move(run));
  }
}

}  // namespace

// predictedStepMs() is sum(stage costs) + (M - 1) x bottleneck, so a saved split still says M.
int impliedMicrobatches(const Partition& split) {
  double sum_ms = 0.0;
  for (const StageCost& stage : split.stages) sum_ms += stage.cost_ms;
  if (split.bottleneck_ms <= 0) return 0;
  const double m = (split.predicted_step_ms - sum_ms) / split.bottleneck_ms + 1.0;
  const double rounded = std::round(m);
  if (rounded < 1 || std::fabs(m - rounded) > 1e-3 * std::max(1.0, rounded)) return 0;
  return static_cast<int>(rounded);
}

ReportInputs buildReportInputs(const Profile& profile, const PartitionOptions& options,
                               const std::string& source, const ReportScheduleOptions& schedules) {
  ReportInputs inputs;
  inputs.profile = profile;
  inputs.profile_source = source;
  inputs.microbatches = options.microbatches;
  inputs.memory_cap_bytes = options.memory_cap_bytes;
  inputs.splits = partitionForComparison(profile, options, source);
  inputs.chosen = chosenSplit(inputs.splits);
  // The schedules are drawn under the options the splits were priced with.
  ReportScheduleOptions simulated = schedules;
  simulated.link.bandwidth_bytes_per_s = options.bandwidth_bytes_per_s;
  simulated.link.latency_ms = options.latency_ms;
  simulated.stage_speed = options.stage_speed;
  simulated.data_parallel = options.data_parallel;
  simulated.dp_link = BoundaryLink{options.dp_bandwidth_bytes_per_s, options.dp_latency_ms};
  simulateSchedules(&inputs, simulated);
  inputs.schedule_choices = scheduleComparisons(profile, bestSplitPerSchedule(profile, options, source));
  return inputs;
}

ReportInputs reportInputsFromSplits(const Profile& profile, const std::string& source,
                                    std::vector<Partition> splits, const std::string& splits_source,
                                    int microbatches, const ReportScheduleOptions& schedules) {
  if (splits.empty()) {
    throw Error(splits_source + ": holds no splits; write it with 'stagecut compare " + source +
                " --stages N -o FILE'");
  }
  for (const Partition& split : splits) {
    checkPartitionCoversLayers(split, profile.layerCount(), splits_source + " (split '" + split.method + "')");
  }
  ReportInputs inputs;
  inputs.profile = profile;
  inputs.profile_source = source;
  inputs.chosen = chosenSplit(splits);
  inputs.splits = std::move(splits);
  inputs.microbatches = microbatches > 0 ? microbatches : impliedMicrobatches(inputs.chosen);
  if (inputs.microbatches <= 0) inputs.microbatches = 4 * static_cast<int>(inputs.chosen.stages.size());
  simulateSchedules(&inputs, schedules);
  return inputs;
}

std::string currentUtcDate() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%d %H:%M UTC", &utc);
  return buffer;
}

}  // namespace stagecut
