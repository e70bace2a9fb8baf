#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/memory_parts.h"
#include "validation/run_environment.h"
#include "schedule/pipeline_schedule.h"
#include "schedule/simulator.h"

namespace stagecut {

/// One rank, measured beside predicted.
struct RankComparison {
  int rank = 0;
  int stage = 0;    ///< rank = replica x stages + stage
  int replica = 0;
  double measured_allreduce_ms = 0.0;  ///< time in its all-reduce op (data parallel only)
  int first_layer = 0;  ///< of the rank's first chunk
  int last_layer = 0;
  /// Every chunk's first and last layer in the rank's local order, where it runs several
  /// (interleaved 1F1B, ZB-V); empty for one.
  std::vector<std::pair<int, int>> chunk_layers;
  double measured_busy_ms = 0.0;
  double predicted_busy_ms = 0.0;
  double measured_bubble = 0.0;   ///< idle / step time on this rank
  double predicted_bubble = 0.0;
  /// The most bytes the rank held in a measured step (weights, gradients, optimizer state and
  /// what the step allocated), and the memory timeline's peak.
  std::int64_t measured_peak_bytes = 0;
  std::uint64_t predicted_peak_bytes = 0;
  /// The memory over the reported step: at the peak of each op of the rank's list, then of the
  /// optimizer step that ends it; measured and predicted (empty in older documents).
  std::vector<double> measured_memory_bytes;
  std::vector<double> predicted_memory_bytes;
  /// The predicted peak by part, and where in the step it is ("B(3)", "the optimizer step").
  std::optional<MemoryParts> predicted_peak_parts;
  std::string predicted_peak_at;
  double grad_max_rel_diff = 0.0;
  std::string worst_parameter;
  /// Median duration of the rank's F, B and W ops in the reported step, measured and predicted
  /// (0 for a kind the schedule does not run): where a rank's busy time departs from the profile.
  double measured_forward_ms = 0.0, predicted_forward_ms = 0.0;
  double measured_backward_ms = 0.0, predicted_backward_ms = 0.0;
  double measured_weight_ms = 0.0, predicted_weight_ms = 0.0;
};

/// The checkpointed run (--recompute full) beside the plain one and its own prediction.
struct RecomputeComparison {
  std::vector<double> measured_step_ms;
  double measured_step_median_ms = 0.0;
  double predicted_step_ms = 0.0;  ///< the simulator with each stage's recompute added to its backward
  double error = 0.0;              ///< measured / predicted - 1
  double grad_max_rel_diff = 0.0;
  /// Per global rank: peak bytes measured and predicted.
  std::vector<std::int64_t> measured_peak_bytes;
  std::vector<std::uint64_t> predicted_peak_bytes;
  std::vector<double> measured_busy_ms;
  std::vector<double> predicted_busy_ms;
  SimulationResult predicted;
  SimulationResult measured;  ///< replica 0's median step
};

/// The answer of `stagecut validate`: the split run for real against its prediction. It is the
/// typed form of the stagecut.validation/1 document (validation_json.h reads and writes it).
struct ValidationReport {
  /// profileFingerprint of the profile that was validated ("" in documents from before it was
  /// recorded): report puts the run beside that profile only.
  std::string profile_fingerprint;
  std::string schedule;
  /// The optimizer each step ended with ("" in documents from before it was recorded: adam).
  std::string optimizer;
  /// Profile fields the memory prediction lacked (missingMemoryFields): its terms left out.
  std::vector<std::string> memory_fields_missing;
  int stages = 0;
  int microbatches = 0;
  int microbatch_size = 0;  ///< samples per microbatch (the profile's size that was run)
  std::vector<double> measured_step_ms;  ///< every measured step
  double measured_step_median_ms = 0.0;
  double predicted_step_ms = 0.0;
  double error = 0.0;  ///< measured / predicted - 1
  double measured_bubble = 0.0;
  double predicted_bubble = 0.0;
  double grad_max_rel_diff = 0.0;
  double grad_tolerance = 0.0;
  bool grad_pass = false;
  /// NaN when the last rank had no loss to report (written as null).
  double loss_pipeline = 0.0;
  double loss_reference = 0.0;
  std::string worst_op;  ///< e.g. "rank 1 B(3)"
  double worst_op_deviation = 0.0;  ///< measured / predicted - 1 of that op
  double link_latency_ms = 0.0;     ///< median over the boundaries
  double link_bandwidth_bytes_per_s = 0.0;  ///< 0 when not measurable
  /// False when a 4 MiB message took no measurably longer than a 1-float one: the link is
  /// faster than the clock can tell, and the prediction charges latency only.
  bool link_bandwidth_measurable = true;
  int replicas = 1;                 ///< D: data-parallel replicas of the pipeline
  double replica_link_latency_ms = 0.0;  ///< measured by all-reduce over the stage groups
  double replica_link_bandwidth_bytes_per_s = 0.0;
  std::vector<RankComparison> ranks;  ///< every global rank, replica by replica
  Schedule ops;                     ///< the op lists both runs follow (with A ops when D > 1)
  SimulationResult predicted;
  SimulationResult measured;        ///< replica 0's median measured step, in ms from its start
  std::vector<SimulationResult> measured_replicas;  ///< the same step on every replica (D entries)
  std::optional<RecomputeComparison> recompute;     ///< with --recompute full
  /// The machine during the run, and whether its figures can be trusted (absent in documents
  /// from before it was recorded).
  std::optional<RunEnvironment> environment;
};

/// Each model stage's [first, last] layers in chain order, as the run's ranks of replica 0 held
/// them: one stage per rank, or each rank's chunks placed as its schedule places them
/// (report.ops.placement). An entry is empty where no rank listed that stage.
std::vector<std::optional<std::pair<int, int>>> modelStageLayers(const ValidationReport& report);

}  // namespace stagecut
