#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/parallel_degrees.h"

namespace stagecut {

/// Format tag of single-size profiles; this build writes it whenever a profile has one size, so
/// that tools which know only version 1 keep reading what stagecut writes.
inline constexpr const char* kProfileFormat = "stagecut.profile/1";
/// Format tag of profiles measured at several microbatch sizes (version 1 plus the
/// `microbatch_sizes` table). This build reads both versions.
inline constexpr const char* kProfileFormatV2 = "stagecut.profile/2";

/// Format tag of profiles measured at several parallel degrees (version 2 plus `shards`, each
/// degree's layers beside those of the degree model.config records).
inline constexpr const char* kProfileFormatV3 = "stagecut.profile/3";

/// Whether `format` is a profile version this build reads.
inline bool isProfileFormat(const std::string& format) {
  return format == kProfileFormat || format == kProfileFormatV2 || format == kProfileFormatV3;
}

/// Spread of one repeated timing, in milliseconds per microbatch. `median` is what the
/// partitioner uses; `cv` is the coefficient of variation (stddev / mean, unitless).
struct TimeStatsMs {
  double median = 0.0;
  double min = 0.0;
  double max = 0.0;
  double cv = 0.0;
  int repeats = 0;  ///< timed runs behind the figures; 0 when unknown (imported profiles)

  /// A timing known only as one number (an imported profile): min = max = median, cv = 0.
  static TimeStatsMs exactly(double ms) { return {ms, ms, ms, 0.0, 0}; }
  bool operator==(const TimeStatsMs& other) const {
    return median == other.median && min == other.min && max == other.max && cv == other.cv &&
           repeats == other.repeats;
  }
};

/// A layer's times as the profiler measured them, kept in a calibrated profile beside the
/// calibrated times that every consumer uses.
struct LayerTimes {
  TimeStatsMs forward_ms;
  TimeStatsMs backward_ms;
  std::optional<TimeStatsMs> backward_input_ms;
  std::optional<TimeStatsMs> backward_weight_ms;
  std::optional<TimeStatsMs> recompute_ms;
  bool operator==(const LayerTimes& other) const {
    return forward_ms == other.forward_ms && backward_ms == other.backward_ms &&
           backward_input_ms == other.backward_input_ms && backward_weight_ms == other.backward_weight_ms &&
           recompute_ms == other.recompute_ms;
  }
};

/// Measured cost of one layer of the chain, per microbatch.
struct LayerCost {
  int index = 0;
  std::string name;
  std::string kind;  ///< e.g. "Embedding"; empty when unknown (imported profiles)
  TimeStatsMs forward_ms;
  TimeStatsMs backward_ms;  ///< whole backward: input grad and weight grad together
  std::optional<TimeStatsMs> backward_input_ms;   ///< B: gradient w.r.t. the layer input
  std::optional<TimeStatsMs> backward_weight_ms;  ///< W: gradient w.r.t. the weights
  /// The extra forward that activation checkpointing runs before the backward (measured with
  /// `profile --recompute`); absent: readers take forward_ms in its place.
  std::optional<TimeStatsMs> recompute_ms;
  std::uint64_t params = 0;
  std::uint64_t param_bytes = 0;
  std::uint64_t activation_bytes = 0;  ///< kept alive for the backward, per microbatch
  std::uint64_t output_bytes = 0;      ///< sent to the next stage (and its gradient back)
  std::optional<std::vector<std::int64_t>> output_shape;
  // What memory needs beyond the kept activations, measured by `stagecut profile` (absent in
  // older and imported profiles; the memory model then names the terms it lacks). Per microbatch
  // where the size matters; docs/metrics.md has the formula they enter.
  /// Most bytes alive during the forward beyond what is alive after it (temporaries).
  std::optional<std::uint64_t> forward_transient_bytes;
  /// Most bytes alive during the backward beyond what was alive at its start (the gradient
  /// arriving and the activations kept), with the weights' gradients already allocated.
  std::optional<std::uint64_t> backward_transient_bytes;
  /// The part of activation_bytes that is the layer's input itself (saved for its backward).
  std::optional<std::uint64_t> input_kept_bytes;
  /// With the backward split into B and W: what B leaves for W beyond the input's gradient (the
  /// gradients at the operations where W starts).
  std::optional<std::uint64_t> weight_pending_bytes;
  /// Bytes of the weights' gradients (param_bytes of the trainable weights).
  std::optional<std::uint64_t> gradient_bytes;
  /// The largest single weight tensor, bytes: what an optimizer's per-tensor temporaries scale with.
  std::optional<std::uint64_t> largest_parameter_bytes;

  /// A tensor-parallel shard's collectives per microbatch (`profile --tensor-parallel t`; absent
  /// for a layer that is no shard): how many run in the forward and in the backward, each moving
  /// `bytes` on a ring of t ranks. Priced only where a link is given (--tp-bandwidth,
  /// prediction/tensor_parallel_comm.h).
  struct TensorParallelCollectives {
    int forward = 0;
    int backward = 0;
    std::uint64_t bytes = 0;
    bool operator==(const TensorParallelCollectives& other) const {
      return forward == other.forward && backward == other.backward && bytes == other.bytes;
    }
  };
  std::optional<TensorParallelCollectives> tp_collectives;
  /// A context-parallel rank's key/value exchange per microbatch (in a profile measured at a CP
  /// degree; `stagecut profile` does not measure one yet; absent for a layer that exchanges nothing): the ring passes `bytes` (this rank's keys and
  /// values) `forward_steps` times in the forward and `backward_steps` times in the backward
  /// (keys, values and their gradients). Priced by the planner on the context-parallel group's
  /// link, where it is not hidden behind the layer's own compute.
  struct ContextParallelExchange {
    int forward_steps = 0;
    int backward_steps = 0;
    std::uint64_t bytes = 0;
    bool operator==(const ContextParallelExchange& other) const {
      return forward_steps == other.forward_steps && backward_steps == other.backward_steps && bytes == other.bytes;
    }
  };
  std::optional<ContextParallelExchange> cp_exchange;

  /// A layer identical to others (same kind and shapes) whose times were not measured on it: the
  /// indices of the identical layers that were timed, whose samples it takes (`profile` times a
  /// sample of identical blocks; absent: the layer was timed itself).
  std::optional<std::vector<int>> times_from;

  /// In a calibrated profile (`stagecut calibrate`): the times before calibration.
  std::optional<LayerTimes> uncalibrated;

  /// recompute_ms when measured, forward_ms otherwise.
  double recomputeMedianMs() const { return recompute_ms ? recompute_ms->median : forward_ms.median; }

  bool operator==(const LayerCost& other) const;
};

/// Which model was measured. `config` holds the source's own settings (layers, hidden, ...).
struct ModelInfo {
  std::string name;
  std::string source;  ///< "zoo:gpt", "torchscript:model.pt", "import:pipedream", ...
  nlohmann::json config = nlohmann::json::object();
  /// "sha256:<hex>" of what was measured: the TorchScript file's bytes, or a zoo model's source
  /// and config (which hold its sizes and seed); "" when not known (imported, or older profiles).
  /// validate checks the model it rebuilds against it.
  std::string fingerprint;
  nlohmann::json extra = nlohmann::json::object();  ///< fields this build does not know, kept
};

/// Where it was measured. Empty strings and zero counts mean "not known".
struct DeviceInfo {
  std::string kind;  ///< "cpu", "cuda", or what an importer knows
  std::string name;
  int threads = 0;
  std::string torch;  ///< LibTorch version
  nlohmann::json extra = nlohmann::json::object();
};

/// The `run` key saying how B and W were timed, and its value when they were timed as a
/// zero-bubble stage runs them: B with W's starting points held back, then W from there. Absent
/// (older profiles): B is the gradient of the input alone and W of the weights alone, and W is
/// predicted as the backward minus B.
inline constexpr const char* kWeightGradientTimingKey = "weight_gradient_timing";
inline constexpr const char* kWeightGradientTimedAfterInput = "after-input-gradient";

/// How it was measured. Zero counts and empty strings mean "not known".
struct RunInfo {
  int microbatch_size = 0;
  int seq_len = 0;
  std::string dtype;
  int warmup = 0;
  int repeats = 0;
  std::string timer;
  nlohmann::json extra = nlohmann::json::object();

  /// Whether B and W were timed as a zero-bubble stage runs them (kWeightGradientTimedAfterInput).
  bool weightTimedAfterInput() const {
    const auto found = extra.find(kWeightGradientTimingKey);
    return found != extra.end() && *found == kWeightGradientTimedAfterInput;
  }
};

/// Whole-model timing, to check that the layers' sum is close to the unsplit model.
struct WholeModelCost {
  double forward_ms = 0.0;
  double backward_ms = 0.0;
  double sum_of_layers_vs_whole = 0.0;  ///< relative difference, unitless
  /// Each layer's median inside the whole-model pass, in layer order: its forward right after
  /// its predecessor's and its backward right after its successor's, as a pipeline stage runs
  /// its layers (docs/profiler.md). Empty when not measured (older and imported profiles).
  std::vector<double> in_chain_forward_ms;
  std::vector<double> in_chain_backward_ms;
  /// Where the whole model does not fit the device, the longest run of consecutive layers that
  /// does, timed together instead: {first, last} layer index, and the fields above are of that
  /// window (in_chain_* then empty). Empty: the whole chain.
  std::vector<int> window;
};

/// One correction factor of a calibrated profile: every layer of `kind` has its `op` time
/// (a LayerCost field: "forward_ms", "backward_ms", "backward_input_ms", "backward_weight_ms")
/// multiplied by `factor`; `observations` is how many measured op medians it was fitted on
/// (0: none, it was carried over from a related op, see docs/metrics.md).
struct CalibrationFactor {
  std::string kind;
  std::string op;
  double factor = 1.0;
  int observations = 0;
  /// The fit's box (calibration/calibration_fit.h) holds it: the runs alone put it further out.
  bool at_bound = false;
  bool operator==(const CalibrationFactor& other) const {
    return kind == other.kind && op == other.op && factor == other.factor && observations == other.observations &&
           at_bound == other.at_bound;
  }
};

/// One validate run a calibration was fitted on (or only checked against), and its predicted
/// step before and after.
struct CalibrationRun {
  std::string source;  ///< the validation file as given
  std::string schedule;
  std::vector<int> layers_per_stage;
  int microbatches = 0;
  bool fitted = true;  ///< false: held out, predicted only
  double measured_step_ms = 0.0;
  double predicted_before_ms = 0.0;
  double predicted_after_ms = 0.0;
  bool operator==(const CalibrationRun& other) const {
    return source == other.source && schedule == other.schedule && layers_per_stage == other.layers_per_stage &&
           microbatches == other.microbatches && fitted == other.fitted &&
           measured_step_ms == other.measured_step_ms && predicted_before_ms == other.predicted_before_ms &&
           predicted_after_ms == other.predicted_after_ms;
  }
};

/// What `stagecut calibrate` did to a profile: the factors, the prior they were drawn toward,
/// the runs, and the fingerprint of the profile before calibration (the one validate's runs of
/// the uncalibrated profile name).
struct ProfileCalibration {
  std::string method;
  double prior_weight = 0.0;
  std::string uncalibrated_fingerprint;
  std::vector<CalibrationFactor> factors;
  std::vector<CalibrationRun> runs;
  bool operator==(const ProfileCalibration& other) const {
    return method == other.method && prior_weight == other.prior_weight &&
           uncalibrated_fingerprint == other.uncalibrated_fingerprint && factors == other.factors &&
           runs == other.runs;
  }
};

/// The layer costs measured at one microbatch size. Names, kinds and parameter counts are the
/// same at every size; times and activation and output bytes change with it.
struct MicrobatchSizeCosts {
  int microbatch_size = 0;
  std::vector<LayerCost> layers;
  std::optional<WholeModelCost> whole_model;
};

/// The layer costs measured at one point of parallelism (`profile --tensor-parallel 1,2,4,8`;
/// a CP degree where a profile holds one): each layer the shard one rank of `degrees` holds, at run's
/// microbatch size and, for a profile measured at several, at each of them.
struct ShardCosts {
  ParallelDegrees degrees;
  std::vector<LayerCost> layers;                      ///< at run.microbatch_size
  std::optional<WholeModelCost> whole_model;
  std::vector<MicrobatchSizeCosts> microbatch_sizes;  ///< empty for a single-size profile
};

/// A measured (or imported) layer chain: the input of the partitioner and the simulator.
/// `layers` and `whole_model` hold the costs at run.microbatch_size, which every consumer that
/// does not plan microbatches uses. A profile measured at several sizes also lists each size's
/// costs in `microbatch_sizes` (ascending, one entry being run.microbatch_size).
struct Profile {
  ModelInfo model;
  DeviceInfo device;
  RunInfo run;
  std::vector<LayerCost> layers;
  std::optional<WholeModelCost> whole_model;
  std::vector<MicrobatchSizeCosts> microbatch_sizes;  ///< empty for a single-size profile
  std::optional<ProfileCalibration> calibration;      ///< set by `stagecut calibrate`
  /// A profile measured at several parallel degrees: every point's layers (the one
  /// model.config names among them, equal to `layers`). Empty: one point, model.config's.
  std::vector<ShardCosts> shards;

  std::size_t layerCount() const { return layers.size(); }
};

/// The microbatch sizes a profile has costs for, ascending: the `microbatch_sizes` table, or
/// run.microbatch_size alone (empty when a single-size profile does not know its size).
std::vector<int> measuredMicrobatchSizes(const Profile& profile);

/// The profile at one measured microbatch size, as a single-size profile (run.microbatch_size
/// set, no table). Throws Error (input) naming `source` and the measured sizes otherwise.
Profile profileAtMicrobatchSize(const Profile& profile, int microbatch_size, const std::string& source);

}  // namespace stagecut
