#include "partitioner/data_parallel_plan.h"

#include <algorithm>

#include "core/error.h"
#include "partitioner/partition_summary.h"
#include "partitioner/profile_partitioner.h"
#include "prediction/pipeline_prediction.h"

namespace stagecut {

namespace {

// The flags a trade-off needs: ranks, and a global batch (with the profile's microbatch size) or
// microbatches per replica.
void checkTradeoffOptions(const TradeoffOptions& options, int microbatch_size, const std::string& source) {
  if (options.ranks < 1) {
    throw Error("--ranks " + std::to_string(options.ranks) +
                ": the trade-off needs at least 1 rank, e.g. --ranks 8");
  }
  if (options.global_batch != 0) {
    if (options.global_batch < 0) {
      throw Error("--global-batch " + std::to_string(options.global_batch) +
                  ": a step needs at least 1 sample, e.g. --global-batch 256");
    }
    if (microbatch_size < 1) {
      throw Error(source + ": the profile does not say its microbatch size, so --global-batch " +
                  "cannot be turned into microbatches; give --microbatches M per replica instead");
    }
  } else if (options.microbatches < 1) {
    throw Error("--microbatches " + std::to_string(options.microbatches) +
                ": a step needs at least 1 microbatch");
  }
}

// The split of one layout (N stages x D replicas, M per replica) under `kind`: the exact optimum
// for it, simulated.
TradeoffRow layoutRow(const Profile& profile, const TradeoffOptions& options, const std::string& source,
                      ScheduleKind kind, int stages, int replicas, int microbatches, int microbatch_size) {
  PartitionOptions partition_options = options.partition;
  partition_options.microbatches = microbatches;
  partition_options.schedule = kind;
  partition_options.placement = schedulePlacement(
      kind, stages, choosesChunks(kind) ? std::optional(options.partition.placement.chunks_per_rank) : std::nullopt);
  partition_options.data_parallel = replicas;
  partition_options.dp_bandwidth_bytes_per_s = options.dp_link.bandwidth_bytes_per_s;
  partition_options.dp_latency_ms = options.dp_link.latency_ms;
  partition_options.bandwidth_bytes_per_s = options.pipeline_link.bandwidth_bytes_per_s;
  partition_options.latency_ms = options.pipeline_link.latency_ms;
  const Partition partition = partitionProfile(profile, partition_options, source, SplitMethod::kCompute);
  const PipelinePrediction predicted = predictPipeline(profile, partition, predictionOptions(partition_options), source);
  const SimulationResult& simulated = predicted.simulated;
  TradeoffRow row;
  row.schedule = scheduleName(kind);
  row.stages = stages;
  row.replicas = replicas;
  row.microbatches = microbatches;
  row.layers_per_stage = partition.layersPerStage();
  row.step_ms = simulated.step_ms;
  row.bubble = simulated.bubble;
  for (const RankStats& rank : simulated.ranks) row.allreduce_ms = std::max(row.allreduce_ms, rank.allreduce_ms);
  row.exposed_allreduce_ms = predicted.exposedAllReduceMs();
  const double samples = static_cast<double>(microbatches) * replicas * std::max(1, microbatch_size);
  row.samples_per_s = simulated.step_ms > 0 ? samples / simulated.step_ms * 1e3 : 0.0;
  for (const StageCost& stage : partition.stages) {
    row.peak_memory_bytes = std::max(row.peak_memory_bytes, stage.memory_bytes);
    row.recompute.push_back(stage.recompute.value_or("none"));
  }
  return row;
}

// No row: every layout was over the caps, or the global batch divides none.
void refuseEmptyTradeoff(const TradeoffOptions& options, int left_out_by_memory, int microbatch_size) {
  if (left_out_by_memory > 0) {
    const bool recomputes = options.partition.recompute.mode != RecomputePolicy::Mode::kNone;
    throw Error("--memory-cap: no layout of " + std::to_string(options.ranks) + " ranks fits; " +
                "raise the cap, use more ranks" + (recomputes ? "" : ", --recompute auto") +
                " or a smaller microbatch");
  }
  // Only a global batch can rule out every layout: N = 1 always fits the layers.
  throw Error("--global-batch " + std::to_string(options.global_batch) + ": no layout of " +
              std::to_string(options.ranks) + " ranks splits it into whole microbatches of " +
              std::to_string(microbatch_size) + " samples; use a multiple of " +
              std::to_string(options.ranks * microbatch_size) + " (ranks x microbatch size)");
}

}  // namespace

Tradeoff dataParallelTradeoff(const Profile& profile, const TradeoffOptions& options,
                              const std::string& source) {
  Tradeoff result;
  result.microbatch_size = profile.run.microbatch_size;
  checkTradeoffOptions(options, result.microbatch_size, source);
  const int layers = static_cast<int>(profile.layerCount());
  int left_out_by_memory = 0;
  for (int stages = 1; stages <= options.ranks; ++stages) {
    if (options.ranks % stages != 0) continue;
    const int replicas = options.ranks / stages;
    const std::string layout = std::to_string(stages) + " x " + std::to_string(replicas);
    if (stages > layers) {
      result.notes.push_back(layout + " left out: " + std::to_string(stages) +
                             " stages need more than the profile's " + std::to_string(layers) + " layers");
      continue;
    }
    int microbatches = options.microbatches;
    if (options.global_batch != 0) {
      const int per_step = replicas * result.microbatch_size;
      if (options.global_batch % per_step != 0) {
        result.notes.push_back(layout + " left out: --global-batch " + std::to_string(options.global_batch) +
                               " is not a multiple of " + std::to_string(replicas) + " replicas x microbatch size " +
                               std::to_string(result.microbatch_size));
        continue;
      }
      microbatches = options.global_batch / per_step;
    }
    for (ScheduleKind kind : options.schedules) {
      const std::string name = scheduleName(kind);
      const std::string count_problem = microbatchCountProblem(kind, stages, microbatches);
      if (!count_problem.empty()) {
        result.notes.push_back(layout + " " + name + " left out: it " + count_problem);
        continue;
      }
      try {
        result.rows.push_back(
            layoutRow(profile, options, source, kind, stages, replicas, microbatches, result.microbatch_size));
      } catch (const Error& error) {
        // A cap no split of this layout meets leaves the layout out; other errors are the input's.
        if (std::string(error.what()).rfind("--memory-cap", 0) != 0) throw;
        result.notes.push_back(layout + " " + name + " left out: " + error.what());
        ++left_out_by_memory;
      }
    }
  }
  if (result.rows.empty()) refuseEmptyTradeoff(options, left_out_by_memory, result.microbatch_size);
  return result;
}

}  // namespace stagecut
