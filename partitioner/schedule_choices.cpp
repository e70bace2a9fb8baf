#include "partitioner/schedule_choices.h"

#include <algorithm>

#include "core/error.h"
#include "core/units.h"
#include "partitioner/chunked_partition.h"
#include "partitioner/framework_formats.h"
#include "partitioner/profile_partitioner.h"
#include "prediction/pipeline_prediction.h"

namespace stagecut {

std::vector<ScheduleChoice> bestSplitPerSchedule(const Profile& profile, const PartitionOptions& options,
                                                 const std::string& source) {
  std::vector<ScheduleChoice> choices;
  const int ranks = options.placement.ranks;
  std::vector<std::pair<ScheduleKind, Placement>> candidates;
  for (ScheduleKind kind : {ScheduleKind::kOneFOneB, ScheduleKind::kZeroBubbleH1, ScheduleKind::kInterleavedOneFOneB,
                            ScheduleKind::kZeroBubbleV, ScheduleKind::kDualPipeV}) {
    for (const Placement& placement : placementsToTry(kind, ranks)) candidates.emplace_back(kind, placement);
  }
  for (const auto& [kind, placement] : candidates) {
    ScheduleChoice choice;
    choice.schedule = kind;
    choice.placement = placement;
    PartitionOptions schedule_options = options;
    schedule_options.schedule = kind;
    schedule_options.placement = placement;
    const std::string count_problem = microbatchCountProblem(kind, ranks, options.microbatches);
    if (!count_problem.empty()) {
      choice.left_out = count_problem;
    } else if (static_cast<std::size_t>(placement.chunkCount()) > profile.layerCount()) {
      choice.left_out = std::to_string(placement.chunkCount()) + " chunks need more layers than the profile's " +
                        std::to_string(profile.layerCount());
    } else {
      try {
        ChunkedSplit search;
        choice.split = scheduleSplit(profile, schedule_options, source, &search);
        choice.exact = search.exact;
        const PipelinePrediction predicted =
            predictPipeline(profile, *choice.split, predictionOptions(schedule_options), source);
        choice.step_ms = predicted.simulated.step_ms;
        choice.bubble = predicted.simulated.bubble;
        for (const RankMemory& rank : predicted.memory.ranks) choice.peak_bytes = std::max(choice.peak_bytes, rank.peak_bytes);
      } catch (const Error& error) {
        if (error.kind() != ErrorKind::kInput) throw;
        choice.left_out = error.what();
        choice.split.reset();
      }
    }
    choices.push_back(std::move(choice));
  }
  return choices;
}

std::string optimalityText(const Partition& split, bool exact) {
  if (exact) return "yes";
  const double gap = split.lower_bound_ms > 0 ? split.bottleneck_ms / split.lower_bound_ms - 1.0 : 0.0;
  return "<= " + formatPercent(gap, gap < 0.01 ? 2 : 1) + " above";
}

std::vector<ScheduleComparison> scheduleComparisons(const Profile& profile, const std::vector<ScheduleChoice>& choices) {
  std::vector<ScheduleComparison> entries;
  for (const ScheduleChoice& choice : choices) {
    ScheduleComparison entry;
    entry.schedule = scheduleName(choice.schedule);
    entry.placement = choice.placement;
    entry.left_out = choice.left_out;
    if (choice.split) {
      entry.split = PartitionDocument{
          *choice.split,
          frameworkOutputs(profile, choice.split->layersPerStage(), choice.split->placement, choice.schedule)};
      entry.exact = choice.exact;
      entry.step_ms = choice.step_ms;
      entry.bubble = choice.bubble;
      entry.peak_bytes = choice.peak_bytes;
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

}  // namespace stagecut
