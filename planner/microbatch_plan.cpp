#include "planner/microbatch_plan.h"

#include <algorithm>
#include <optional>

#include "core/error.h"
#include "core/suggest.h"
#include "core/units.h"
#include "partitioner/chunked_partition.h"
#include "partitioner/partition_summary.h"
#include "partitioner/profile_partitioner.h"
#include "prediction/pipeline_prediction.h"

namespace stagecut {

namespace {

// generateSchedule's own limit (schedule/generators.h): N x M x v forward ops per step.
constexpr std::int64_t kMaxForwardOps = std::int64_t{1} << 22;

void checkRequest(const PlanRequest& request, const std::vector<int>& measured) {
  if (request.global_batch < 1) {
    throw Error("--global-batch " + std::to_string(request.global_batch) + ": must be 1 or more samples per step");
  }
  const Placement& placement = request.partition.placement;
  if (choosesChunks(request.partition.schedule) && !request.choose_chunks && !placement.chunked()) {
    throw Error("--chunks " + std::to_string(placement.chunks_per_rank) +
                ": interleaved-1f1b needs 2 or more chunks per rank");
  }
  checkRunsPlacement(request.partition.schedule, placement, "--schedule " + std::string(scheduleName(request.partition.schedule)));
  const int replicas = request.partition.data_parallel;
  if (replicas < 1 || request.global_batch % replicas != 0) {
    throw Error("--global-batch " + std::to_string(request.global_batch) + ": must split evenly over --data-parallel " +
                std::to_string(replicas) + " replicas; use a multiple of " + std::to_string(std::max(replicas, 1)));
  }
  const int per_replica = request.global_batch / replicas;
  const bool divides = std::any_of(measured.begin(), measured.end(), [&](int size) { return per_replica % size == 0; });
  if (!divides) {
    const std::string what = replicas > 1 ? "the " + std::to_string(per_replica) + " samples per replica" : "it";
    throw Error("--global-batch " + std::to_string(request.global_batch) + ": no measured microbatch size (" +
                joinNumbers(measured, ", ") + ") divides " + what + "; use a global batch that one of them divides, or " +
                "profile a size that divides " + std::to_string(per_replica));
  }
}

PlanRow planRow(const Profile& at_size, int size, bool measured, const PlanRequest& request, const Placement& placement,
                const std::string& source) {
  PlanRow row;
  row.microbatch_size = size;
  row.microbatches = request.global_batch / request.partition.data_parallel / size;
  row.measured = measured;
  row.placement = placement;
  PartitionOptions options = request.partition;
  options.microbatches = row.microbatches;
  options.placement = placement;
  const bool capped = !options.memory_cap_bytes.empty();
  PartitionOptions uncapped = options;
  uncapped.memory_cap_bytes.clear();
  // The uncapped split first: its errors are the options' (the same for every row); a capped
  // split that fails only means this row does not fit.
  row.partition = scheduleSplit(at_size, uncapped, source);
  if (capped) {
    try {
      row.partition = scheduleSplit(at_size, options, source);
    } catch (const Error&) {
      row.feasible = false;
    }
  }
  row.layers_per_stage = row.partition.layersPerStage();
  row.bottleneck_ms = row.partition.bottleneck_ms;

  const PredictionOptions prediction = predictionOptions(options);
  const SimulationResult simulated = predictPipeline(at_size, row.partition, prediction, source).simulated;
  row.step_ms = simulated.step_ms;
  row.bubble = simulated.bubble;
  row.samples_per_s = row.step_ms > 0 ? request.global_batch / (row.step_ms / 1000.0) : 0.0;

  // The partitioner's memory term takes the schedule's in-flight counts, so it is every
  // schedule's peak: weights' state plus kept activations at the busiest point. Each chunk
  // carries its rank's peak.
  const Placement split = row.partition.rankPlacement();
  for (int rank = 0; rank < split.ranks; ++rank) {
    row.peak_memory_bytes.push_back(row.partition.stages[static_cast<std::size_t>(split.chunkAt(rank, 0))].memory_bytes);
  }
  if (capped) {
    for (std::size_t s = 0; s < row.peak_memory_bytes.size(); ++s) {
      const std::uint64_t cap = options.memory_cap_bytes.size() == 1 ? options.memory_cap_bytes[0]
                                                                     : options.memory_cap_bytes[s];
      if (row.peak_memory_bytes[s] > cap) {
        row.feasible = false;
        const std::uint64_t over = row.peak_memory_bytes[s] - cap;
        if (over > row.overflow_bytes) {
          row.overflow_bytes = over;
          row.overflow_stage = static_cast<int>(s);
        }
      }
    }
  }
  return row;
}

// The placements the request plans at, fewest chunks first: v = 2, 3, 4 when it chooses, else its one.
std::vector<Placement> placementsOf(const PlanRequest& request) {
  const PartitionOptions& options = request.partition;
  return request.choose_chunks ? placementsToTry(options.schedule, options.placement.ranks)
                               : std::vector<Placement>{options.placement};
}

// A row that fits beats one that does not, then the shorter step.
bool betterRow(const PlanRow& a, const PlanRow& b) {
  if (a.feasible != b.feasible) return a.feasible;
  return a.step_ms < b.step_ms;
}

// The size's row at each chunk count the request allows, the best kept; none when every one is
// over the generators' op limit. Trying v = 2, 3, 4, a v whose chunking the options rule out
// (rules, too few layers) is passed over, and its error stands only when no v is left.
std::optional<PlanRow> bestRowOverChunks(const Profile& at_size, int size, bool measured, const PlanRequest& request,
                                         const std::string& source) {
  const std::int64_t microbatches = request.global_batch / request.partition.data_parallel / size;
  std::optional<PlanRow> best;
  std::optional<Error> first_error;
  for (const Placement& placement : placementsOf(request)) {
    if (placement.chunkCount() * microbatches > kMaxForwardOps) continue;
    try {
      PlanRow row = planRow(at_size, size, measured, request, placement, source);
      if (!best || betterRow(row, *best)) best = std::move(row);
    } catch (const Error& error) {
      if (!request.choose_chunks || error.kind() != ErrorKind::kInput) throw;
      if (!first_error) first_error = error;
    }
  }
  if (!best && first_error) throw *first_error;
  return best;
}

}  // namespace

std::vector<const LayerFitReport*> MicrobatchPlan::flaggedLayers() const {
  std::vector<const LayerFitReport*> flagged;
  for (const auto& fit : fits) {
    if (!fit.fits_line) flagged.push_back(&fit);
  }
  return flagged;
}

namespace {

// The sizes that divide `n` into whole microbatches, ascending: by pairs up to sqrt(n), so a
// global batch of two billion takes microseconds, not seconds.
std::vector<int> divisorsOf(int n) {
  std::vector<int> small, large;
  for (int d = 1; static_cast<long long>(d) * d <= n; ++d) {
    if (n % d != 0) continue;
    small.push_back(d);
    if (d != n / d) large.push_back(n / d);
  }
  small.insert(small.end(), large.rbegin(), large.rend());
  return small;
}

// Why no size could be planned: the measured sizes' reasons first (the sizes the user expects),
// then the first other size's whose reason is another, each reason once with its sizes.
std::string whyNoSize(const MicrobatchPlan& plan) {
  std::vector<std::pair<std::string, std::vector<int>>> reasons;  // in order of first appearance
  const auto listed = [&](const std::string& reason) {
    return std::find_if(reasons.begin(), reasons.end(), [&](const auto& entry) { return entry.first == reason; });
  };
  const auto add = [&](const SkippedSize& skipped) {
    auto it = listed(skipped.reason);
    if (it == reasons.end()) it = reasons.insert(reasons.end(), {skipped.reason, {}});
    it->second.push_back(skipped.microbatch_size);
  };
  const auto measured = [&](int size) {
    return std::find(plan.measured_sizes.begin(), plan.measured_sizes.end(), size) != plan.measured_sizes.end();
  };
  for (const auto& skipped : plan.skipped) {
    if (measured(skipped.microbatch_size)) add(skipped);
  }
  for (const auto& skipped : plan.skipped) {
    if (!measured(skipped.microbatch_size) && listed(skipped.reason) == reasons.end()) {
      add(skipped);
      break;
    }
  }
  std::string why;
  for (const auto& [reason, sizes] : reasons) {
    std::string numbers;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      numbers += (i == 0 ? "" : i + 1 == sizes.size() ? " and " : ", ") + std::to_string(sizes[i]);
    }
    why += (why.empty() ? "" : "; ") + std::string("microbatch ") + numbers + ": " + reason;
  }
  return why;
}

}  // namespace

MicrobatchPlan planMicrobatches(const Profile& profile, const PlanRequest& request, const std::string& source) {
  const SizedProfile sized(profile, request.fit_tolerance, source);
  MicrobatchPlan plan;
  plan.request = request;
  plan.measured_sizes = sized.measuredSizes();
  plan.fits = sized.fits();
  checkRequest(request, plan.measured_sizes);
  checkStageCount(request.partition.placement.ranks, profile.layerCount());
  const int per_replica = request.global_batch / request.partition.data_parallel;
  bool too_many_ops = false;
  for (const int size : divisorsOf(per_replica)) {
    const std::string reason = sized.notCoveredReason(size);
    if (!reason.empty()) {
      plan.skipped.push_back({size, reason});
      continue;
    }
    const bool measured = std::find(plan.measured_sizes.begin(), plan.measured_sizes.end(), size) !=
                          plan.measured_sizes.end();
    const int microbatches = per_replica / size;
    const int stages = request.partition.placement.ranks;
    const std::string count_problem = microbatchCountProblem(request.partition.schedule, stages, microbatches);
    if (!count_problem.empty()) {
      plan.skipped.push_back({size, std::string(scheduleName(request.partition.schedule)) + " " + count_problem});
      continue;
    }
    std::optional<PlanRow> chosen = bestRowOverChunks(sized.at(size), size, measured, request, source);
    if (!chosen) {
      // One text for every size, so the sizes it stops are listed together.
      const Placement fewest = placementsOf(request).front();
      plan.skipped.push_back({size, "G / b microbatches x " + std::to_string(stages) + " stages" +
                                        (fewest.chunked() ? " x " + std::to_string(fewest.chunks_per_rank) + " chunks" : "") +
                                        " is over the " + formatCount(kMaxForwardOps) +
                                        " forward ops one simulated step holds"});
      too_many_ops = true;
      continue;
    }
    plan.rows.push_back(std::move(*chosen));
  }
  if (plan.rows.empty()) {
    std::string fix = "pick a global batch that a measured size divides into a whole number of microbatches the "
                      "schedule can run";
    if (too_many_ops) {
      // The largest batch whose largest measured size stays within the op limit.
      const std::int64_t per_step = placementsOf(request).front().chunkCount();
      const std::int64_t largest = static_cast<std::int64_t>(request.partition.data_parallel) *
                                   plan.measured_sizes.back() * (kMaxForwardOps / per_step);
      fix = "use a --global-batch of at most " + std::to_string(largest) + " (" +
            std::to_string(kMaxForwardOps / per_step) + " microbatches of " +
            std::to_string(plan.measured_sizes.back()) + (request.partition.data_parallel > 1 ? " per replica" : "") +
            ") that a measured size divides";
    }
    throw Error("--global-batch " + std::to_string(request.global_batch) + ": no microbatch size can be planned (" +
                whyNoSize(plan) + "); " + fix);
  }
  for (std::size_t i = 0; i < plan.rows.size(); ++i) {
    const PlanRow& row = plan.rows[i];
    if (!row.feasible) continue;
    if (plan.best < 0 || row.step_ms < plan.rows[static_cast<std::size_t>(plan.best)].step_ms) {
      plan.best = static_cast<int>(i);
    }
  }
  return plan;
}

void requireFeasibleRow(const MicrobatchPlan& plan) {
  if (plan.best >= 0 || plan.rows.empty()) return;
  const auto fastest = std::min_element(plan.rows.begin(), plan.rows.end(),
                                        [](const PlanRow& a, const PlanRow& b) { return a.step_ms < b.step_ms; });
  const bool chunked = runsChunks(plan.request.partition.schedule);
  const std::string fixes = "raise the cap, use more --stages or --recompute full";
  if (fastest->overflow_stage < 0) {
    throw Error("--memory-cap: no microbatch size fits; even at the fastest row (microbatch " +
                std::to_string(fastest->microbatch_size) + ") no split meets the caps; " + fixes);
  }
  const int stage = fastest->overflow_stage;
  const std::uint64_t needs = fastest->peak_memory_bytes[static_cast<std::size_t>(stage)];
  throw Error("--memory-cap: no microbatch size fits; at the fastest row (microbatch " +
              std::to_string(fastest->microbatch_size) + ", " + std::to_string(fastest->microbatches) +
              " microbatches) " + (chunked ? "rank " : "stage ") + std::to_string(stage) + " needs " +
              formatBytes(needs) + ", " + formatBytes(fastest->overflow_bytes) + " over its cap; " + fixes);
}

}  // namespace stagecut
