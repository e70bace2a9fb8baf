#include "partitioner/chunked_partition.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "partitioner/profile_partitioner.h"
#include "partitioner/simulated_refinement.h"
#include "prediction/pipeline_prediction.h"
#include "schedule/generators.h"

namespace stagecut {

namespace {

Placement chunkPlacement(const PartitionOptions& options) {
  if (!runsChunks(options.schedule)) {
    throw Error(std::string("--schedule ") + scheduleName(options.schedule) + ": " + scheduleName(options.schedule) +
                " runs one chunk per rank; use --schedule interleaved-1f1b, zb-v or dualpipe-v to split into chunks");
  }
  checkRunsPlacement(options.schedule, options.placement, "--schedule " + std::string(scheduleName(options.schedule)));
  return options.placement;
}

// The one way every chunk keeps its activations: a chunked split recomputes uniformly (auto is
// resolved to one of its modes by partitionChunked).
std::optional<RecomputeOption> uniformRecompute(const Profile& profile, const PartitionOptions& options) {
  if (options.recompute.mode == RecomputePolicy::Mode::kNone) return std::nullopt;
  const std::vector<RecomputeOption> modes = recomputeOptions(profile, options.recompute);
  if (modes.size() != 1) {
    throw Error("--recompute " + options.recompute.text() + ": a chunked split takes one mode for every chunk here");
  }
  return modes.front();
}

// The chain's chunks as the cost model's stages: chunk c at its rank's speed, without caps (a
// cap is a rank's, checked on its memory timeline).
CostModel chunkCostModel(const Profile& profile, const PartitionOptions& options, const Placement& placement,
                         const std::string& source) {
  PartitionOptions per_chunk = options;
  per_chunk.placement = Placement::loop(placement.chunkCount(), 1);
  per_chunk.schedule = ScheduleKind::kOneFOneB;
  per_chunk.memory_cap_bytes.clear();
  per_chunk.stage_speed.clear();
  for (int c = 0; c < placement.chunkCount() && !options.stage_speed.empty(); ++c) {
    per_chunk.stage_speed.push_back(options.stage_speed[static_cast<std::size_t>(placement.rankOf(c))]);
  }
  return buildCostModel(profile, per_chunk, source);
}

// The slowest rank's load of a chunking, from the cost model alone (no simulation); +infinity
// where a chunk would end at a forbidden cut or hold no layer.
double slowestRankMs(const CostModel& model, const Placement& placement, const std::vector<int>& counts) {
  std::vector<double> load(static_cast<std::size_t>(placement.ranks), 0.0);
  int first = 0;
  for (int c = 0; c < placement.chunkCount(); ++c) {
    const int last = first + counts[static_cast<std::size_t>(c)] - 1;
    if (last < first || !model.canEndAt(last)) return std::numeric_limits<double>::infinity();
    load[static_cast<std::size_t>(placement.rankOf(c))] += chunkCostMs(model, placement, c, first, last);
    first = last + 1;
  }
  return *std::max_element(load.begin(), load.end());
}

// Moves of one layer from one chunk to another (the chunks between shift by one layer) while the
// simulated step shrinks, the slowest rank does not grow and every cap holds. Chunks far apart
// matter: the fill and drain favour a rank's extra layer in one chunk over another, and a move
// between neighbours often has to pass a rank that is already the slowest.
Partition refinedBySimulatedStep(const Profile& profile, const PartitionOptions& options, const CostModel& model,
                                 Partition best, const std::string& source, const ChunkedSplit& split) {
  const Placement placement = *best.placement;
  const int chunks = placement.chunkCount();
  const double tolerance = 1e-9 * best.bottleneck_ms;
  const PredictionOptions prediction = predictionOptions(options);
  for (bool moved = true; moved;) {
    moved = false;
    for (int from = 0; from < chunks; ++from) {
      for (int to = 0; to < chunks; ++to) {
        std::vector<int> counts = best.layersPerStage();
        if (from == to || counts[static_cast<std::size_t>(from)] < 2) continue;
        --counts[static_cast<std::size_t>(from)];
        ++counts[static_cast<std::size_t>(to)];
        if (slowestRankMs(model, placement, counts) > best.bottleneck_ms + tolerance) continue;
        if (!(simulatedSplitStepMs(profile, prediction, model, counts, placement) < best.predicted_step_ms - tolerance)) {
          continue;
        }
        Partition candidate = describeChunkedSplit(profile, options, counts, best.method, source, &split);
        bool fits = true;
        for (int r = 0; r < placement.ranks && fits && !options.memory_cap_bytes.empty(); ++r) {
          fits = static_cast<double>(candidate.stages[static_cast<std::size_t>(placement.chunkAt(r, 0))].memory_bytes) <=
                 stageCapBytes(options, r);
        }
        if (!fits) continue;
        best = std::move(candidate);
        moved = true;
      }
    }
  }
  return best;
}

}  // namespace

Partition describeChunkedSplit(const Profile& profile, const PartitionOptions& options,
                               const std::vector<int>& layers_per_chunk, const std::string& method,
                               const std::string& source, const ChunkedSplit* search) {
  const Placement placement = chunkPlacement(options);
  const CostModel model = chunkCostModel(profile, options, placement, source);
  Partition partition;
  partition.method = method;
  partition.placement = placement;
  std::vector<double> load(static_cast<std::size_t>(placement.ranks), 0.0);
  int first = 0;
  for (int c = 0; c < placement.chunkCount(); ++c) {
    StageCost stage;
    stage.first = first;
    stage.last = first + layers_per_chunk[static_cast<std::size_t>(c)] - 1;
    for (int k = stage.first; k <= stage.last; ++k) {
      const LayerCost& layer = profile.layers[static_cast<std::size_t>(k)];
      stage.forward_ms += layer.forward_ms.median;
      stage.backward_ms += layer.backward_ms.median;
      stage.params += layer.params;
    }
    stage.comm_ms = chunkCommMs(model, placement, c, stage.first, stage.last);
    stage.cost_ms = chunkCostMs(model, placement, c, stage.first, stage.last);
    if (options.recompute.mode != RecomputePolicy::Mode::kNone) {
      stage.recompute = model.recomputeName(0);
      stage.recompute_ms = model.recomputeExtraMs(0, stage.first, stage.last);
    }
    if (options.data_parallel > 1) stage.allreduce_ms = model.allReduceMs(stage.first, stage.last);
    load[static_cast<std::size_t>(placement.rankOf(c))] += stage.cost_ms;
    partition.stages.push_back(stage);
    first = stage.last + 1;
  }
  partition.bottleneck_ms = *std::max_element(load.begin(), load.end());
  double speed_sum = 0.0;
  for (int r = 0; r < placement.ranks; ++r) {
    speed_sum += options.stage_speed.empty() ? 1.0 : options.stage_speed[static_cast<std::size_t>(r)];
  }
  partition.lower_bound_ms = search ? search->lower_bound_ms : model.totalComputeMs() / speed_sum;
  // The step, bubble and memory of the one prediction path, each chunk showing its rank's peak.
  const PipelinePrediction predicted = predictPipeline(profile, partition, predictionOptions(options), source);
  for (int c = 0; c < placement.chunkCount(); ++c) {
    const RankMemory& rank = predicted.memory.ranks[static_cast<std::size_t>(placement.rankOf(c))];
    StageCost& stage = partition.stages[static_cast<std::size_t>(c)];
    stage.memory_bytes = static_cast<std::uint64_t>(std::llround(rank.peak_bytes));
    MemoryParts parts = rank.peak_parts;
    for (double* part : {&parts.weights, &parts.gradients, &parts.optimizer, &parts.activations, &parts.buffers,
                         &parts.transient}) {
      *part = std::round(*part);
    }
    stage.memory_parts = parts;
  }
  partition.predicted_step_ms = predicted.simulated.step_ms;
  partition.predicted_bubble = predicted.simulated.bubble;
  return partition;
}

Partition scheduleSplit(const Profile& profile, const PartitionOptions& options, const std::string& source,
                        ChunkedSplit* search) {
  if (options.placement.chunked()) return partitionChunked(profile, options, source, search);
  Partition split = partitionProfile(profile, options, source, SplitMethod::kCompute);
  if (search) {
    *search = ChunkedSplit{};
    search->layers_per_chunk = split.layersPerStage();
    search->bottleneck_ms = split.bottleneck_ms;
    search->lower_bound_ms = split.lower_bound_ms;
    search->exact = true;  // the N-stage solver is exact
    search->search_complete = true;
  }
  return split;
}

namespace {

Partition partitionChunkedUniformly(const Profile& profile, const PartitionOptions& options, const std::string& source,
                                    ChunkedSplit* search) {
  const Placement placement = chunkPlacement(options);
  checkStageCount(placement.ranks, profile.layerCount());
  if (static_cast<std::size_t>(placement.chunkCount()) > profile.layerCount()) {
    // --chunks only where the user chose the count: a V's two are its schedule's.
    const bool chosen = choosesChunks(options.schedule);
    throw Error((chosen ? "--chunks " + std::to_string(placement.chunks_per_rank) : "--schedule " + std::string(scheduleName(options.schedule))) +
                ": " + placementWords(placement) + " need " + std::to_string(placement.chunkCount()) +
                " layers, the profile has " + std::to_string(profile.layerCount()) + "; use " +
                (chosen ? "fewer --chunks" : "fewer --stages or a schedule of one chunk per rank"));
  }
  const CostModel model = chunkCostModel(profile, options, placement, source);
  const Schedule schedule =
      pipelineSchedule(options.schedule, placement, options.microbatches, options.data_parallel);
  StageMemoryRules rules;
  rules.splits_backward = schedule.splits_backward;
  rules.optimizer = options.optimizerMemory();
  const std::optional<RecomputeOption> recompute = uniformRecompute(profile, options);
  if (recompute) rules.recompute = &*recompute;
  const StageMemoryTable table(layerMemoryTerms(profile), rules);
  ChunkedProblem problem;
  problem.chunks = &model;
  problem.placement = placement;
  problem.node_budget = options.chunk_search_nodes;
  if (!options.memory_cap_bytes.empty()) {
    problem.memory.table = &table;
    for (int r = 0; r < placement.ranks; ++r) {
      problem.memory.rank_states.push_back(rankPeakCandidates(
          rankChunkMemoryStates(schedule.ranks[static_cast<std::size_t>(r)], placement, r, schedule.splits_backward,
                                recompute.has_value())));
      problem.memory.rank_cap_bytes.push_back(stageCapBytes(options, r));
    }
  }
  const ChunkedSplit split = solveChunkedSplit(problem);
  if (search) *search = split;
  const bool free = options.rules == SplitRuleSet::kAny;
  const std::string method = free ? kFreeMethod : "compute";
  // Among chunkings whose slowest rank is no slower, the schedule's own step decides.
  Partition best = refinedBySimulatedStep(
      profile, options, model, describeChunkedSplit(profile, options, split.layers_per_chunk, method, source, &split),
      source, split);
  if (search) {
    // A search cut short may leave the slowest rank above the bound; the refinement may bring it
    // down to the bound, which then proves it.
    search->bottleneck_ms = best.bottleneck_ms;
    search->exact = search->exact || best.bottleneck_ms <= search->lower_bound_ms * (1.0 + 1e-9);
  }
  return best;
}

// --recompute auto over chunks: each mode it weighs (none, selective:<kinds>, full) applied to
// every chunk, the fastest predicted step that fits kept.
std::vector<RecomputePolicy> uniformModes(const RecomputePolicy& policy) {
  if (policy.mode != RecomputePolicy::Mode::kAuto) return {policy};
  std::vector<RecomputePolicy> modes = {RecomputePolicy{RecomputePolicy::Mode::kNone, {}}};
  if (!policy.kinds.empty()) modes.push_back(RecomputePolicy{RecomputePolicy::Mode::kSelective, policy.kinds});
  modes.push_back(RecomputePolicy{RecomputePolicy::Mode::kFull, {}});
  return modes;
}

}  // namespace

Partition partitionChunked(const Profile& profile, const PartitionOptions& options, const std::string& source,
                           ChunkedSplit* search) {
  std::optional<Partition> best;
  std::optional<Error> last_error;
  ChunkedSplit best_search;
  for (const RecomputePolicy& mode : uniformModes(options.recompute)) {
    PartitionOptions uniform = options;
    uniform.recompute = mode;
    ChunkedSplit mode_search;
    try {
      Partition split = partitionChunkedUniformly(profile, uniform, source, &mode_search);
      if (!best || split.predicted_step_ms < best->predicted_step_ms) {
        best = std::move(split);
        best_search = mode_search;
      }
    } catch (const Error& error) {
      // A mode no chunking fits leaves the others; with only one mode its error is the answer.
      if (error.kind() != ErrorKind::kInput) throw;
      last_error = error;
    }
  }
  if (!best) throw *last_error;
  if (search) *search = best_search;
  return *best;
}

}  // namespace stagecut
