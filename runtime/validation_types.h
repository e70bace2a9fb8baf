#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "validation/run_environment.h"

#include "runtime/stage_executor.h"

namespace stagecut {

/// What `stagecut validate` runs: a profile's model, split by a partition, under a schedule.
struct ValidateRequest {
  std::string profile_path;
  std::string partition_path;
  /// One of the profile's measured microbatch sizes to run (`--microbatch-size`); 0: the size its
  /// layers hold.
  int microbatch_size = 0;
  std::string schedule = "1f1b";
  int microbatches = 8;
  int steps = 5;
  int warmup_steps = 1;
  int threads = 1;
  double timeout_s = 120.0;
  /// Largest accepted relative gradient difference; defaultGradTolerance of the profile's precision.
  double grad_tolerance = 1e-4;
  std::uint64_t batch_seed = 1234;
  /// "none", or "full": after the plain steps, run them again with every stage checkpointed.
  std::string recompute = "none";
  /// D: data-parallel replicas of the pipeline (N x D ranks), each on its own M microbatches.
  int data_parallel = 1;
  /// The optimizer run at the end of each step (StageOptimizer): none, sgd, sgd-momentum, adam;
  /// adam-mixed for a low-precision profile (defaultOptimizerFor).
  std::string optimizer = "adam";
  /// `--device`: auto (the profile's kind), cpu, cuda (a GPU per rank while there are enough) or
  /// cuda:K; planRankDevices (validation/rank_devices.h) places the ranks.
  std::string device = "auto";
  /// `--backend`: auto, gloo or nccl; choosePipelineBackend (validation/rank_devices.h) decides.
  std::string backend = "auto";
};

/// One rank's measurements, sent to rank 0 at the end.
struct RankOutcome {
  int rank = 0;
  int first_layer = 0;  ///< of the rank's first chunk
  int last_layer = 0;
  /// Every chunk's first and last layer, in the rank's local order (one for an N-stage pipeline).
  std::vector<std::pair<int, int>> chunk_layers;
  /// The measured steps' op records; their peak_bytes count everything the rank holds: its
  /// weights, gradients and optimizer state as well as what the step allocates.
  std::vector<std::vector<OpRecord>> steps;
  std::vector<std::int64_t> optimizer_step_peak_bytes;  ///< per measured step, likewise
  std::int64_t peak_bytes = 0;               ///< the most of all of them
  double grad_max_rel_diff = 0.0;            ///< against the full-batch gradient of the same layers
  std::string worst_parameter;
  double loss_pipeline = std::numeric_limits<double>::quiet_NaN();   ///< last rank only
  double loss_reference = std::numeric_limits<double>::quiet_NaN();  ///< last rank only
  double link_latency_ms = 0.0;              ///< to the next rank; 0 on the last
  double link_bandwidth_bytes_per_s = 0.0;   ///< 0 when not measurable
  bool has_link = false;                     ///< whether the rank probed a link to the next one
  /// False when its 4 MiB message took no measurably longer than its 1-float one.
  bool link_bandwidth_measurable = true;
  RankEnvironment environment;               ///< the machine around the rank's steps
  int stage = 0;    ///< the model stage this rank runs (rank = replica x stages + stage)
  int replica = 0;  ///< its data-parallel replica
  /// The replicas' link, measured by all-reduce on stage groups (0 without replicas).
  double replica_latency_ms = 0.0;
  double replica_bandwidth_bytes_per_s = 0.0;
  /// With --recompute full: the checkpointed steps' op records and their peak bytes.
  std::vector<std::vector<OpRecord>> recompute_steps;
  std::vector<std::int64_t> recompute_optimizer_step_peak_bytes;
  std::int64_t recompute_peak_bytes = 0;
  double recompute_grad_max_rel_diff = 0.0;  ///< the gradient check after the checkpointed steps
  double recompute_loss_pipeline = std::numeric_limits<double>::quiet_NaN();
};

/// The gradient tolerance validate holds a split to when --grad-tolerance is not given, by the
/// profile's run.dtype: 1e-4 for float32 (summation order), wider for bfloat16 and float16, whose
/// gradients differ from the full batch's by their rounding (docs/runtime.md).
double defaultGradTolerance(const std::string& precision);

nlohmann::json rankOutcomeToJson(const RankOutcome& outcome);
RankOutcome rankOutcomeFromJson(const nlohmann::json& document);

}  // namespace stagecut
