#include "planner/plan_json.h"

namespace stagecut {

namespace {

using nlohmann::json;

json fitToJson(const LinearFit& fit) {
  return {{"intercept", fit.intercept}, {"slope", fit.slope}, {"max_relative_residual", fit.max_relative_residual}};
}

}  // namespace

PlanDocument planDocument(const MicrobatchPlan& plan) {
  PlanDocument document;
  document.global_batch = plan.request.global_batch;
  document.stages = plan.request.partition.stages;
  document.schedule = plan.request.partition.schedule;
  document.measured_sizes = plan.measured_sizes;
  document.fit_tolerance = plan.request.fit_tolerance;
  document.rows.assign(plan.rows.begin(), plan.rows.end());
  document.best = plan.best;
  document.skipped = plan.skipped;
  document.fits = plan.fits;
  return document;
}

json planToJson(const PlanDocument& document) {
  json rows = json::array();
  for (const PlanRowFigures& row : document.rows) {
    json item = {{"microbatch_size", row.microbatch_size},
                 {"microbatches", row.microbatches},
                 {"measured", row.measured},
                 {"layers_per_stage", row.layers_per_stage},
                 {"bottleneck_ms", row.bottleneck_ms},
                 {"predicted_step_ms", row.step_ms},
                 {"bubble", row.bubble},
                 {"peak_memory_bytes", row.peak_memory_bytes},
                 {"feasible", row.feasible},
                 {"samples_per_s", row.samples_per_s}};
    if (!row.feasible && row.overflow_stage >= 0) {
      item["overflow"] = {{"stage", row.overflow_stage}, {"bytes", row.overflow_bytes}};
    }
    rows.push_back(std::move(item));
  }
  json skipped = json::array();
  for (const SkippedSize& size : document.skipped) {
    skipped.push_back({{"microbatch_size", size.microbatch_size}, {"reason", size.reason}});
  }
  json fits = json::array();
  for (const LayerFitReport& fit : document.fits) {
    fits.push_back({{"index", fit.index},
                    {"name", fit.name},
                    {"fits_line", fit.fits_line},
                    {"forward_ms", fitToJson(fit.forward)},
                    {"backward_ms", fitToJson(fit.backward)},
                    {"activation_bytes", fitToJson(fit.activation)}});
  }
  return {{"format", kPlanFormat},
          {"global_batch", document.global_batch},
          {"stages", document.stages},
          {"schedule", scheduleName(document.schedule)},
          {"measured_sizes", document.measured_sizes},
          {"fit_tolerance", document.fit_tolerance},
          {"rows", std::move(rows)},
          {"best", document.best >= 0 ? json(document.best) : json(nullptr)},
          {"skipped", std::move(skipped)},
          {"fits", std::move(fits)}};
}

}  // namespace stagecut
