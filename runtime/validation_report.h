#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/partition.h"
#include "core/profile.h"
#include "runtime/validation_types.h"
#include "schedule/simulator.h"

namespace stagecut {

/// One rank, measured beside predicted.
struct RankComparison {
  int rank = 0;
  int first_layer = 0;
  int last_layer = 0;
  double measured_busy_ms = 0.0;
  double predicted_busy_ms = 0.0;
  double measured_bubble = 0.0;   ///< idle / step time on this rank
  double predicted_bubble = 0.0;
  std::int64_t measured_peak_bytes = 0;     ///< most bytes allocated during a step
  std::uint64_t predicted_peak_bytes = 0;   ///< the schedule's in-flight activations on this stage
  double grad_max_rel_diff = 0.0;
  std::string worst_parameter;
};

/// The answer of `stagecut validate`: the split run for real against its prediction.
struct ValidationReport {
  std::string schedule;
  int stages = 0;
  int microbatches = 0;
  std::vector<double> measured_step_ms;  ///< every measured step
  double measured_step_median_ms = 0.0;
  double predicted_step_ms = 0.0;
  double error = 0.0;  ///< measured / predicted - 1
  double measured_bubble = 0.0;
  double predicted_bubble = 0.0;
  double grad_max_rel_diff = 0.0;
  double grad_tolerance = 0.0;
  bool grad_pass = false;
  double loss_pipeline = 0.0;
  double loss_reference = 0.0;
  std::string worst_op;  ///< e.g. "rank 1 B(3)"
  double worst_op_deviation = 0.0;  ///< measured / predicted - 1 of that op
  double link_latency_ms = 0.0;     ///< median over the boundaries
  double link_bandwidth_bytes_per_s = 0.0;
  std::vector<RankComparison> ranks;
  Schedule ops;                     ///< the op lists both runs follow
  SimulationResult predicted;
  SimulationResult measured;        ///< the median measured step, in ms from its start
};

/// Builds the report from every rank's outcome: prediction from the profile's medians plus the
/// measured links, on the same op lists.
ValidationReport buildValidationReport(const ValidateRequest& request, const Profile& profile,
                                       const Partition& partition, const std::vector<RankOutcome>& outcomes);

/// The `stagecut.validation/1` document.
nlohmann::json validationToJson(const ValidationReport& report);

/// A Chrome trace with the predicted and the measured step as two processes, one track per rank.
std::string validationTrace(const ValidationReport& report);

}  // namespace stagecut
