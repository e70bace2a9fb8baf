#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "schedule/pipeline_schedule.h"
#include "schedule/simulator.h"
#include "validation/validation_report.h"

namespace stagecut {

/// One rank of a validation run as the report shows it.
struct ValidationRankView {
  int first = 0;  ///< first layer of the rank's (first) chunk
  int last = 0;   ///< last layer, inclusive
  std::int64_t measured_peak_bytes = -1;    ///< -1 when the document does not say
  std::int64_t predicted_peak_bytes = -1;
  /// Bytes at the peak of each op and of the optimizer step, measured and predicted (empty in
  /// documents without them).
  std::vector<double> measured_memory_bytes;
  std::vector<double> predicted_memory_bytes;
};

/// What the report reads from a `stagecut.validation/1` document: the summary figures and the
/// predicted and measured step rebuilt as schedules and simulation results, so the same Gantt
/// renderer draws both on one time axis.
struct ValidationView {
  std::string source;
  std::string schedule;  ///< e.g. "1f1b"
  int stages = 0;
  int microbatches = 0;
  int data_parallel = 1;  ///< D replicas of the pipeline ("data_parallel", 1 when absent)
  double measured_step_ms = 0.0;
  double predicted_step_ms = 0.0;
  double error = 0.0;  ///< measured / predicted - 1
  std::string grad_check;  ///< "pass", "fail" or empty
  double grad_max_rel_diff = 0.0;
  /// Why the machine voids the run's figures (the document's environment warnings); empty when
  /// trusted or not recorded.
  std::vector<std::string> environment_warnings;
  std::vector<ValidationRankView> ranks;
  /// The op lists of the predicted and the measured step (the same ops; names "predicted ..."
  /// and "measured ..." so the chart's panels say which is which).
  Schedule predicted_ops;
  Schedule measured_ops;
  SimulationResult predicted;
  SimulationResult measured;

  /// Layers per model stage as the ranks held them, in chain order, e.g. {4, 3, 2, 2}.
  std::vector<int> layers_per_stage;
};

/// The view of a validation run of a profile with `layer_count` layers: rank layer ranges must
/// lie in it. Throws Error (input) naming `source` otherwise.
ValidationView validationView(const ValidationReport& report, const std::string& source, std::size_t layer_count);

/// validationView of a document as validationFromJson reads it (and rejects it).
ValidationView readValidationView(const nlohmann::json& document, const std::string& source,
                                  std::size_t layer_count);

}  // namespace stagecut
