#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/profile.h"
#include "partitioner/cost_model.h"
#include "partitioner/split_rules.h"
#include "prediction/pipeline_prediction.h"
#include "prediction/recompute.h"
#include "schedule/schedule_kind.h"

namespace stagecut {

/// Everything the user decides about a split, in units; the CLI fills it from flags.
struct PartitionOptions {
  /// The schedule the split is made for: the chunked solver's (partitionChunked), and the
  /// one whose in-flight activations the N-stage solver's memory term charges (schedule/in_flight.h).
  ScheduleKind schedule = ScheduleKind::kOneFOneB;
  /// The N ranks and the chunks `schedule` runs on each (schedulePlacement). With v > 1 the
  /// split is N x v chunks (partitionChunked); an N-stage split run under it has each rank's
  /// stage divided evenly into its chunks.
  Placement placement;
  int microbatches = 1;  ///< M per step
  RecomputePolicy recompute;  ///< activation checkpointing: more forward, less memory
  /// D: replicas of every stage; with D > 1 each stage's gradient all-reduce (ring, over the
  /// dp link) is charged where it does not hide behind later stages' cool-down.
  int data_parallel = 1;
  double dp_bandwidth_bytes_per_s = 0.0;  ///< 0 with dp_latency_ms = 0: all-reduce is free
  double dp_latency_ms = 0.0;
  /// Link bandwidth in bytes per second; 0 with latency_ms = 0 means no communication modelled.
  double bandwidth_bytes_per_s = 0.0;
  double latency_ms = 0.0;  ///< per message, each direction
  /// The chunked search's nodes before it settles for the best found and its proven gap
  /// (ChunkedProblem::node_budget); a planner pricing many layouts gives fewer.
  std::int64_t chunk_search_nodes = 2'000'000;
  std::vector<double> stage_speed;  ///< relative speed per stage; empty: all 1
  /// Weights + gradients + optimizer state per parameter, bytes (adam: 16).
  double bytes_per_param = 16.0;
  /// The optimizer step's temporaries in largest weight tensors (OptimizerMemory): adam 2, sgd 0.
  double optimizer_step_temporaries = 2.0;
  /// What of the weights, gradients and state each rank holds (a distributed optimizer, FSDP).
  MemorySharding sharding;

  /// The optimizer memory these options charge.
  OptimizerMemory optimizerMemory() const { return OptimizerMemory{bytes_per_param, optimizer_step_temporaries, sharding}; }
  /// One cap for all stages, one per stage, or none (empty).
  std::vector<std::uint64_t> memory_cap_bytes;
  /// The rules the exact split obeys (partitioner/split_rules.h). Unset: those of every
  /// framework stagecut prints for the chain (frameworkRules), so the split a user is shown
  /// runs in each of them; kAny for the free optimum.
  std::optional<SplitRuleSet> rules;

  /// Whether any communication cost is charged.
  bool modelsCommunication() const { return bandwidth_bytes_per_s > 0 || latency_ms > 0; }
};

/// What predictPipeline() needs of a split's options: schedule, M, chunks, stage speeds, data
/// parallelism and both links, so that a split is simulated under the options it was made with.
PredictionOptions predictionOptions(const PartitionOptions& options);

/// Parses `--stage-speed 1,1,0.5,1`: one relative speed per stage, from 0.001 to 1000. Throws
/// Error (input) naming the flag for a wrong count or a value that is not such a number.
std::vector<double> parseStageSpeeds(const std::string& text, int stages);

/// Parses `--memory-cap 80GiB` (all stages) or `--memory-cap 80GiB,80GiB,40GiB,80GiB` (per
/// stage) with parseBytes. Throws Error (input) for a bad size or a wrong count.
std::vector<std::uint64_t> parseMemoryCaps(const std::string& text, int stages);

/// The memory cap of stage (rank) `stage` in bytes, +infinity without caps. Throws Error (input)
/// when options.memory_cap_bytes holds neither one cap nor one per stage.
double stageCapBytes(const PartitionOptions& options, int stage);

/// Throws Error (input) for --stages below 1 (`--stages 0: a pipeline needs at least 1 stage`)
/// or above the layer count (`--stages 9: the profile has 7 layers; use --stages 7 or fewer`).
void checkStageCount(int stages, std::size_t layers);

/// The rules `options` put on a split of `profile`: options.rules' set, or frameworkRules.
SplitRules resolvedSplitRules(const Profile& profile, const PartitionOptions& options);

/// Checks the options against the profile (`source` names it in messages) and resolves them
/// into the solvers' cost model. Throws Error (input) for --stages < 1 or above the layer count,
/// --microbatches < 1, --data-parallel < 1, a profile whose layers all take 0 ms, a wrong number
/// of speeds or caps, and numbers whose sums a double cannot hold (times, transfers) or that
/// exceed 8 EiB of memory.
CostModel buildCostModel(const Profile& profile, const PartitionOptions& options,
                         const std::string& source);

}  // namespace stagecut
