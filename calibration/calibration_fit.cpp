#include "calibration/calibration_fit.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include <Eigen/Dense>

#include "calibration/bounded_quadratic.h"
#include "core/error.h"
#include "prediction/stage_memory.h"
#include "schedule/schedule_kind.h"

namespace stagecut {

namespace {

// The layer times a factor applies to, named by their profile fields.
enum class TimedOp { kForward, kBackward, kBackwardInput, kWeight };
constexpr TimedOp kTimedOps[] = {TimedOp::kForward, TimedOp::kBackward, TimedOp::kBackwardInput, TimedOp::kWeight};

const char* fieldOf(TimedOp op) {
  switch (op) {
    case TimedOp::kForward: return "forward_ms";
    case TimedOp::kBackward: return "backward_ms";
    case TimedOp::kBackwardInput: return "backward_input_ms";
    case TimedOp::kWeight: return "backward_weight_ms";
  }
  return "";
}

double medianOf(const LayerCost& layer, TimedOp op) {
  switch (op) {
    case TimedOp::kForward: return layer.forward_ms.median;
    case TimedOp::kBackward: return layer.backward_ms.median;
    case TimedOp::kBackwardInput: return layer.backward_input_ms ? layer.backward_input_ms->median : 0.0;
    case TimedOp::kWeight: return layer.backward_weight_ms ? layer.backward_weight_ms->median : 0.0;
  }
  return 0.0;
}

// A layer without a kind (an imported profile's) is its own group.
std::string kindOf(const LayerCost& layer) { return layer.kind.empty() ? layer.name : layer.kind; }

using KindTimes = std::map<std::string, double>;

// One measured op median and what the uncalibrated profile says it is made of, by layer kind.
struct Observation {
  double measured_ms = 0.0;
  KindTimes profiled_ms;
};

struct FittedFactor {
  double factor = 1.0;
  int observations = 0;
  bool at_bound = false;
};

using OpFactors = std::map<std::string, FittedFactor>;  // by kind

// Minimizes sum ((measured - profiled . c) / measured)^2 + prior_weight * sum (c - 1)^2 over
// kMinFactor <= c <= kMaxFactor.
OpFactors fitOp(const std::vector<Observation>& observations, double prior_weight) {
  std::vector<std::string> kinds;
  for (const auto& observation : observations) {
    for (const auto& [kind, ms] : observation.profiled_ms) {
      if (ms > 0 && std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) kinds.push_back(kind);
    }
  }
  OpFactors fitted;
  if (kinds.empty()) return fitted;
  const auto count = static_cast<Eigen::Index>(kinds.size());
  Eigen::MatrixXd normal = prior_weight * Eigen::MatrixXd::Identity(count, count);
  Eigen::VectorXd right = prior_weight * Eigen::VectorXd::Ones(count);
  for (const auto& observation : observations) {
    Eigen::VectorXd row = Eigen::VectorXd::Zero(count);
    for (Eigen::Index k = 0; k < count; ++k) {
      const auto found = observation.profiled_ms.find(kinds[static_cast<std::size_t>(k)]);
      if (found != observation.profiled_ms.end()) row(k) = found->second / observation.measured_ms;
    }
    normal += row * row.transpose();
    right += row;  // the relative target: measured / measured = 1
  }
  const BoxedMinimum solved = minimizeBoxedQuadratic(normal, right, kMinFactor, kMaxFactor);
  for (Eigen::Index k = 0; k < count; ++k) {
    FittedFactor factor;
    factor.factor = solved.point(k);
    factor.at_bound = solved.at_bound[static_cast<std::size_t>(k)];
    for (const auto& observation : observations) {
      const auto found = observation.profiled_ms.find(kinds[static_cast<std::size_t>(k)]);
      if (found != observation.profiled_ms.end() && found->second > 0) ++factor.observations;
    }
    fitted[kinds[static_cast<std::size_t>(k)]] = factor;
  }
  return fitted;
}

void scaleStats(TimeStatsMs& stats, double factor) {
  stats.median *= factor;
  stats.min *= factor;
  stats.max *= factor;
}

void applyFactors(LayerCost& layer, const std::map<TimedOp, OpFactors>& factors) {
  const std::string kind = kindOf(layer);
  const auto factorOf = [&](TimedOp op) {
    const auto& by_kind = factors.at(op);
    const auto found = by_kind.find(kind);
    return found == by_kind.end() ? 1.0 : found->second.factor;
  };
  layer.uncalibrated = LayerTimes{layer.forward_ms, layer.backward_ms, layer.backward_input_ms,
                                  layer.backward_weight_ms, layer.recompute_ms};
  scaleStats(layer.forward_ms, factorOf(TimedOp::kForward));
  if (layer.recompute_ms) scaleStats(*layer.recompute_ms, factorOf(TimedOp::kForward));
  scaleStats(layer.backward_ms, factorOf(TimedOp::kBackward));
  if (layer.backward_input_ms) scaleStats(*layer.backward_input_ms, factorOf(TimedOp::kBackwardInput));
  if (layer.backward_weight_ms) scaleStats(*layer.backward_weight_ms, factorOf(TimedOp::kWeight));
}

void restoreTimes(LayerCost& layer) {
  if (!layer.uncalibrated) return;
  const LayerTimes times = *layer.uncalibrated;
  layer.forward_ms = times.forward_ms;
  layer.backward_ms = times.backward_ms;
  layer.backward_input_ms = times.backward_input_ms;
  layer.backward_weight_ms = times.backward_weight_ms;
  layer.recompute_ms = times.recompute_ms;
  layer.uncalibrated.reset();
}

// Its ops' measured times, one list per rank, as validate writes them.
bool hasMeasuredOps(const ValidationReport& report) {
  if (report.measured_replicas.empty()) return false;
  for (const auto& measured : report.measured_replicas) {
    if (measured.op_times.size() != report.ops.ranks.size()) return false;
    for (std::size_t stage = 0; stage < measured.op_times.size(); ++stage) {
      if (measured.op_times[stage].size() != report.ops.ranks[stage].size()) return false;
    }
  }
  return true;
}

}  // namespace

RunSetting runSetting(const ValidationReport& report, int layer_count, const std::string& source) {
  RunSetting setting;
  setting.partition.method = "validated";
  const Placement placement = report.ops.placement;
  const std::vector<std::optional<std::pair<int, int>>> stages = modelStageLayers(report);
  int next = 0;
  for (std::size_t s = 0; s < stages.size(); ++s) {
    if (!stages[s] || stages[s]->first != next || stages[s]->second < stages[s]->first) {
      throw Error(source + ": stage " + std::to_string(s) + " does not start at layer " + std::to_string(next) +
                  "; its ranks' layer ranges do not split the profile's layers in order (was it run on another profile?)");
    }
    StageCost stage;
    stage.first = stages[s]->first;
    stage.last = stages[s]->second;
    setting.partition.stages.push_back(stage);
    next = stage.last + 1;
  }
  if (placement.chunked()) setting.partition.placement = placement;
  if (next != layer_count) {
    throw Error(source + ": its stages cover " + std::to_string(next) + " layers, the profile has " +
                std::to_string(layer_count) + "; give the profile the run was made with");
  }
  PredictionOptions& options = setting.options;
  options.schedule = parseScheduleName(report.schedule);
  options.microbatches = report.microbatches;
  options.data_parallel = report.replicas;
  options.link.latency_ms = report.link_latency_ms;
  options.link.bandwidth_bytes_per_s = report.link_bandwidth_measurable ? report.link_bandwidth_bytes_per_s : 0.0;
  options.dp_link.latency_ms = report.replica_link_latency_ms;
  options.dp_link.bandwidth_bytes_per_s = report.replica_link_bandwidth_bytes_per_s;
  if (!report.optimizer.empty()) options.optimizer = optimizerMemory(report.optimizer);
  return setting;
}

Profile uncalibratedProfile(const Profile& profile) {
  Profile raw = profile;
  for (auto& layer : raw.layers) restoreTimes(layer);
  for (auto& size : raw.microbatch_sizes) {
    for (auto& layer : size.layers) restoreTimes(layer);
  }
  raw.calibration.reset();
  return raw;
}

namespace {

using Observations = std::map<TimedOp, std::vector<Observation>>;

// Refuses a run that cannot be held to the profile: another microbatch size, or (to fit on it)
// no measured timeline, or B and W run apart where the profile timed them each alone.
void checkRunFitsProfile(const CalibrationInput& run, const Profile& raw) {
  const ValidationReport& report = run.report;
  if (report.microbatch_size != 0 && raw.run.microbatch_size != 0 &&
      report.microbatch_size != raw.run.microbatch_size) {
    throw Error(run.source + ": ran microbatches of " + std::to_string(report.microbatch_size) +
                " samples, the profile's layers hold size " + std::to_string(raw.run.microbatch_size) +
                "; calibrate on runs of the profile's size");
  }
  if (!run.fitted) return;
  if (!hasMeasuredOps(report)) {
    throw Error(run.source + ": has no measured timeline; run validate --json again with this stagecut");
  }
  if (report.ops.splits_backward && !raw.run.weightTimedAfterInput()) {
    throw Error(run.source + ": schedule " + report.schedule +
                " runs B and W apart, but the profile's B and W were timed each alone; profile the model again " +
                "with this stagecut, which times them as " + report.schedule + " runs them");
  }
}

// Every op of the measured step is an observation: the step is their sum along its critical
// path, so a slow op (a step's first forward) counts as often as it happens, not as a median.
void addObservations(const ValidationReport& report, const RunSetting& setting, const Profile& raw,
                     Observations& observations) {
  const bool splits_w = report.ops.splits_backward;
  for (const SimulationResult& measured : report.measured_replicas) {
    for (std::size_t stage = 0; stage < report.ops.ranks.size(); ++stage) {
      for (std::size_t i = 0; i < report.ops.ranks[stage].size(); ++i) {
        const PipelineOp& pipeline_op = report.ops.ranks[stage][i];
        const StageCost& layers = setting.partition.stages[static_cast<std::size_t>(
            report.ops.placement.chunkAt(static_cast<int>(stage), pipeline_op.chunk))];
        const OpKind kind = pipeline_op.kind;
        TimedOp op = TimedOp::kForward;
        if (kind == OpKind::kBackward) op = splits_w ? TimedOp::kBackwardInput : TimedOp::kBackward;
        else if (kind == OpKind::kWeight) op = TimedOp::kWeight;
        else if (kind != OpKind::kForward) continue;  // the all-reduce is the link's, not a layer's
        const OpTiming& timing = measured.op_times.at(stage).at(i);
        Observation observation;
        observation.measured_ms = timing.end_ms - timing.start_ms;
        double profiled = 0.0;
        for (int layer_index = layers.first; layer_index <= layers.last; ++layer_index) {
          const LayerCost& layer = raw.layers[static_cast<std::size_t>(layer_index)];
          observation.profiled_ms[kindOf(layer)] += medianOf(layer, op);
          profiled += medianOf(layer, op);
        }
        if (observation.measured_ms > 0 && profiled > 0) observations[op].push_back(observation);
      }
    }
  }
}

using KindOpTimes = std::map<TimedOp, KindTimes>;

const FittedFactor* fittedFactor(std::map<TimedOp, OpFactors>& factors, TimedOp op, const std::string& kind) {
  const auto found = factors[op].find(kind);
  return found == factors[op].end() ? nullptr : &found->second;
}

// Carries factors to the ops no run measured, per kind: `kind_ms` says what each op takes in
// the profile.
void carryFactors(std::map<TimedOp, OpFactors>& factors, KindOpTimes& kind_ms) {
  for (const auto& [kind, unused] : kind_ms[TimedOp::kForward]) {
    (void)unused;
    // A whole backward no run measured: B's and W's factors, weighted by their times.
    if (!fittedFactor(factors, TimedOp::kBackward, kind) && kind_ms[TimedOp::kBackward][kind] > 0) {
      const FittedFactor* input = fittedFactor(factors, TimedOp::kBackwardInput, kind);
      const FittedFactor* weight = fittedFactor(factors, TimedOp::kWeight, kind);
      const double input_ms = kind_ms[TimedOp::kBackwardInput][kind];
      const double weight_ms = kind_ms[TimedOp::kWeight][kind];
      if ((input || weight) && input_ms + weight_ms > 0) {
        const double factor = ((input ? input->factor : 1.0) * input_ms + (weight ? weight->factor : 1.0) * weight_ms) /
                              (input_ms + weight_ms);
        factors[TimedOp::kBackward][kind] = FittedFactor{factor, 0, false};
      }
    }
  }
  for (const auto& [kind, unused] : kind_ms[TimedOp::kForward]) {
    (void)unused;
    // B or W no run measured apart: the whole backward's factor.
    const FittedFactor* whole = fittedFactor(factors, TimedOp::kBackward, kind);
    for (TimedOp op : {TimedOp::kBackwardInput, TimedOp::kWeight}) {
      if (whole && whole->observations > 0 && !fittedFactor(factors, op, kind)) {
        factors[op][kind] = FittedFactor{whole->factor, 0, false};
      }
    }
  }
}

// The calibration a calibrated profile carries: every factor by kind and op, and each run's
// step as measured and as predicted before and after.
ProfileCalibration calibrationRecord(const Profile& raw, const Profile& calibrated, const std::string& uncalibrated_fingerprint,
                                     const std::vector<CalibrationInput>& runs, const std::vector<RunSetting>& settings,
                                     std::map<TimedOp, OpFactors>& factors, KindOpTimes& kind_ms,
                                     const CalibrationOptions& options) {
  ProfileCalibration record;
  record.method = kCalibrationMethod;
  record.prior_weight = options.prior_weight;
  record.uncalibrated_fingerprint = uncalibrated_fingerprint;
  for (const auto& [kind, unused] : kind_ms[TimedOp::kForward]) {
    (void)unused;
    for (TimedOp op : kTimedOps) {
      if (kind_ms[op][kind] <= 0) continue;
      const FittedFactor* fitted = fittedFactor(factors, op, kind);
      record.factors.push_back({kind, fieldOf(op), fitted ? fitted->factor : 1.0, fitted ? fitted->observations : 0,
                                fitted && fitted->at_bound});
    }
  }
  for (std::size_t r = 0; r < runs.size(); ++r) {
    const RunSetting& setting = settings[r];
    CalibrationRun entry;
    entry.source = runs[r].source;
    entry.schedule = runs[r].report.schedule;
    entry.layers_per_stage = setting.partition.layersPerStage();
    entry.microbatches = runs[r].report.microbatches;
    entry.fitted = runs[r].fitted;
    entry.measured_step_ms = runs[r].report.measured_step_median_ms;
    entry.predicted_before_ms = predictPipeline(raw, setting.partition, setting.options, entry.source).simulated.step_ms;
    entry.predicted_after_ms =
        predictPipeline(calibrated, setting.partition, setting.options, entry.source).simulated.step_ms;
    record.runs.push_back(entry);
  }
  return record;
}

}  // namespace

Profile calibrateProfile(const Profile& profile, const std::string& uncalibrated_fingerprint,
                         const std::vector<CalibrationInput>& runs, const CalibrationOptions& options) {
  const Profile raw = uncalibratedProfile(profile);
  const int layer_count = static_cast<int>(raw.layerCount());
  if (std::none_of(runs.begin(), runs.end(), [](const CalibrationInput& run) { return run.fitted; })) {
    throw Error("calibrate: no run to fit on; give at least one with --validation");
  }
  std::vector<RunSetting> settings;
  Observations observations;
  for (const auto& run : runs) {
    settings.push_back(runSetting(run.report, layer_count, run.source));
    checkRunFitsProfile(run, raw);
    if (run.fitted) addObservations(run.report, settings.back(), raw, observations);
  }

  std::map<TimedOp, OpFactors> factors;
  for (TimedOp op : kTimedOps) factors[op] = fitOp(observations[op], options.prior_weight);
  // Per kind, what each op takes in the profile: for carrying a factor to an op no run measured.
  KindOpTimes kind_ms;
  for (const auto& layer : raw.layers) {
    for (TimedOp op : kTimedOps) kind_ms[op][kindOf(layer)] += medianOf(layer, op);
  }
  carryFactors(factors, kind_ms);
  Profile calibrated = raw;
  for (auto& layer : calibrated.layers) applyFactors(layer, factors);
  for (auto& size : calibrated.microbatch_sizes) {
    for (auto& layer : size.layers) applyFactors(layer, factors);
  }
  calibrated.calibration =
      calibrationRecord(raw, calibrated, uncalibrated_fingerprint, runs, settings, factors, kind_ms, options);
  return calibrated;
}

}  // namespace stagecut
