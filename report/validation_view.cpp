#include "report/validation_view.h"

#include <algorithm>

#include "core/error.h"
#include "schedule/svg_gantt.h"
#include "validation/validation_json.h"

namespace stagecut {

ValidationView validationView(const ValidationReport& report, const std::string& source, std::size_t layer_count) {
  ValidationView view;
  view.source = source;
  view.schedule = report.schedule;
  view.stages = report.stages;
  view.microbatches = report.microbatches;
  view.data_parallel = report.replicas;
  view.measured_step_ms = report.measured_step_median_ms;
  view.predicted_step_ms = report.predicted_step_ms;
  view.error = report.error;
  view.grad_check = report.grad_pass ? "pass" : "fail";
  view.grad_max_rel_diff = report.grad_max_rel_diff;
  if (report.environment) view.environment_warnings = report.environment->warnings;
  // With data parallelism the document lists every replica's ranks; the view keeps replica 0's,
  // whose timeline it draws.
  for (int r = 0; r < report.stages; ++r) {
    const RankComparison& rank = report.ranks[static_cast<std::size_t>(r)];
    const int last = rank.chunk_layers.empty() ? rank.last_layer : rank.chunk_layers.back().second;
    if (static_cast<std::size_t>(std::max(rank.last_layer, last)) >= layer_count) {
      throw Error(source + ": rank " + std::to_string(r) + " holds layers " + std::to_string(rank.first_layer) + "-" +
                  std::to_string(std::max(rank.last_layer, last)) + " but the profile has " +
                  std::to_string(layer_count) + " layers; was it validated on another profile?");
    }
    view.ranks.push_back({rank.first_layer, rank.last_layer, rank.measured_peak_bytes,
                          static_cast<std::int64_t>(rank.predicted_peak_bytes), rank.measured_memory_bytes,
                          rank.predicted_memory_bytes});
  }
  for (const auto& stage : modelStageLayers(report)) {
    // The reader checked each rank's chunks; a stage no rank lists would be a document's error.
    view.layers_per_stage.push_back(stage ? stage->second - stage->first + 1 : 0);
  }
  const std::string name = scheduleDisplayName(view.schedule);
  view.predicted_ops = view.measured_ops = report.ops;
  view.predicted_ops.name = "Predicted " + name;
  view.measured_ops.name = "Measured " + name;
  view.predicted = report.predicted;
  view.measured = report.measured;
  view.predicted.schedule = view.predicted_ops.name;
  view.measured.schedule = view.measured_ops.name;
  return view;
}

ValidationView readValidationView(const nlohmann::json& document, const std::string& source,
                                  std::size_t layer_count) {
  return validationView(validationFromJson(document, source), source, layer_count);
}

}  // namespace stagecut
