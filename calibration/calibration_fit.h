#pragma once

#include <string>
#include <vector>

#include "core/partition.h"
#include "core/profile.h"
#include "prediction/pipeline_prediction.h"
#include "validation/validation_report.h"

namespace stagecut {

/// The method name a calibrated profile records (docs/metrics.md, "Calibration").
/// /2: each factor fitted within [kMinFactor, kMaxFactor] (/1 refused a fit that left it).
inline constexpr const char* kCalibrationMethod = "per-kind-ridge/2";

/// The box every fitted factor is kept in: beyond it a correction says more about the runs (of
/// another machine, or an op they barely measured) than about the model.
inline constexpr double kMinFactor = 0.1;
inline constexpr double kMaxFactor = 10.0;

/// A validate run as calibration takes it: where it came from, what it measured, and whether the
/// factors are fitted on it or it is only predicted (held out).
struct CalibrationInput {
  std::string source;
  ValidationReport report;
  bool fitted = true;
};

struct CalibrationOptions {
  /// How strongly each factor is drawn toward 1: the weight of (factor - 1)^2 beside each
  /// measured op's squared relative error.
  double prior_weight = 0.01;
};

/// The split and the settings a validate run ran with, as the prediction path takes them.
struct RunSetting {
  Partition partition;
  PredictionOptions options;
};

/// The setting of `report` (its stages' layer ranges, schedule, microbatches, links, replicas,
/// optimizer). Throws Error (input), naming `source`, when its stages do not cover the profile's
/// `layer_count` layers in order.
RunSetting runSetting(const ValidationReport& report, int layer_count, const std::string& source);

/// The profile as the profiler measured it: a calibrated profile's uncalibrated times put back
/// at every microbatch size and its calibration dropped; any other profile as it is.
Profile uncalibratedProfile(const Profile& profile);

/// Fits one factor per (layer kind, op) to the measured op medians of the fitted runs, by least
/// squares on relative errors with each factor drawn toward 1 and kept in [kMinFactor,
/// kMaxFactor] (docs/metrics.md; a factor the box holds is marked `at_bound`), and returns the
/// profile with every layer's times multiplied by its factors, its uncalibrated times kept, and
/// the calibration recorded: the factors and each run's predicted step before and after.
/// `profile` is taken uncalibrated first (uncalibratedProfile), so calibrating again refits from
/// the measurement. `uncalibrated_fingerprint` is recorded for the runs that name that profile.
/// Throws Error (input), naming the run, when no run is fitted, when a run is of another microbatch
/// size, lacks op medians, or splits W off on a profile whose B and W were not timed as zero-bubble
/// runs them.
Profile calibrateProfile(const Profile& profile, const std::string& uncalibrated_fingerprint,
                         const std::vector<CalibrationInput>& runs, const CalibrationOptions& options);

}  // namespace stagecut
