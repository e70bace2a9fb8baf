#include "report/report_inputs.h"

#include <cmath>
#include <ctime>

#include "core/error.h"
#include "core/json_document.h"
#include "core/partition_json.h"
#include "partitioner/profile_partitioner.h"
#include "schedule/generators.h"
#include "schedule/svg_gantt.h"

namespace stagecut {

namespace {

constexpr const char* kComparisonFormat = "stagecut.comparison/1";

void simulateSchedules(ReportInputs* inputs, const ReportScheduleOptions& options) {
  const int stages = static_cast<int>(inputs->chosen.stages.size());
  for (const std::string& name : options.names) {
    const bool interleaved = name == "interleaved-1f1b";
    if (interleaved && (inputs->microbatches % stages != 0 || stages < 2)) {
      inputs->notes.push_back("Interleaved 1F1B is not shown: it needs the microbatches (" +
                              std::to_string(inputs->microbatches) + ") to be a multiple of the " +
                              std::to_string(stages) + " stages");
      continue;
    }
    const int chunks = interleaved ? options.chunks : 1;
    ReportSchedule run;
    run.schedule = generateSchedule(name, stages, inputs->microbatches, chunks);
    const PartitionCosts costs = costsFromPartition(inputs->profile, inputs->chosen, chunks,
                                                    options.link, inputs->profile_source);
    run.result = simulate(run.schedule, costs.costs);
    if (interleaved && chunks > 1) {
      inputs->notes.push_back("Interleaved 1F1B divides each stage's costs evenly into its " +
                              std::to_string(chunks) + " chunks: the split fixes each rank's " +
                              "work, not the chunk layout");
    }
    if (run.schedule.splits_backward && costs.layers_with_even_split > 0) {
      inputs->notes.push_back(std::to_string(costs.layers_with_even_split) + " of " +
                              std::to_string(inputs->profile.layerCount()) +
                              " layers have no separate B and W times; " +
                              scheduleDisplayName(name) + " splits their backward evenly");
    }
    inputs->schedules.push_back(std::move(run));
  }
}

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

}  // namespace

ReportInputs buildReportInputs(const Profile& profile, const PartitionOptions& options,
                               const std::string& source, const ReportScheduleOptions& schedules) {
  ReportInputs inputs;
  inputs.profile = profile;
  inputs.profile_source = source;
  inputs.microbatches = options.microbatches;
  inputs.memory_cap_bytes = options.memory_cap_bytes;
  for (SplitMethod method : {SplitMethod::kUniform, SplitMethod::kParams, SplitMethod::kCompute}) {
    inputs.splits.push_back(partitionProfile(profile, options, source, method));
  }
  inputs.chosen = inputs.splits.back();
  ReportScheduleOptions simulated = schedules;
  simulated.link.bandwidth_bytes_per_s = options.bandwidth_bytes_per_s;
  simulated.link.latency_ms = options.latency_ms;
  simulateSchedules(&inputs, simulated);
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
  inputs.chosen = splits.back();
  for (const Partition& split : splits) {
    if (split.method == "compute") inputs.chosen = split;
  }
  inputs.splits = std::move(splits);
  inputs.microbatches = microbatches > 0 ? microbatches : impliedMicrobatches(inputs.chosen);
  if (inputs.microbatches <= 0) inputs.microbatches = 4 * static_cast<int>(inputs.chosen.stages.size());
  simulateSchedules(&inputs, schedules);
  return inputs;
}

std::vector<Partition> splitsFromComparisonJson(const nlohmann::json& document,
                                                const std::string& source) {
  const std::string format = documentFormat(document, source);
  if (format != kComparisonFormat) {
    throw Error(source + ": is a " + format + " document, not " + kComparisonFormat +
                "; write one with 'stagecut compare PROFILE --stages N -o FILE'");
  }
  if (!document.contains("splits") || !document["splits"].is_array()) {
    throw Error(source + ": field \"splits\" is missing or not a list");
  }
  std::vector<Partition> splits;
  for (std::size_t i = 0; i < document["splits"].size(); ++i) {
    splits.push_back(partitionFromJson(document["splits"][i], source + " split " + std::to_string(i)));
  }
  return splits;
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
