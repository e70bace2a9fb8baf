#include "planner/plan_json.h"

#include <limits>

#include "core/error.h"
#include "core/json_document.h"
#include "core/json_fields.h"

namespace stagecut {

namespace {

using nlohmann::json;

// The writer's counts are ints, so any int in range reads back.
constexpr int kMaxCount = std::numeric_limits<int>::max();

json fitToJson(const LinearFit& fit) {
  return {{"intercept", fit.intercept}, {"slope", fit.slope}, {"max_relative_residual", fit.max_relative_residual}};
}

LinearFit fitFromJson(const JsonFields& fields, const char* key) {
  const JsonFields line = fields.object(key);
  LinearFit fit;
  // Least squares may give a negative intercept or slope; only the residual is a size.
  fit.intercept = line.finite("intercept");
  fit.slope = line.finite("slope");
  fit.max_relative_residual = line.nonNegative("max_relative_residual");
  return fit;
}

ScheduleKind scheduleFromJson(const JsonFields& fields) {
  const std::string name = fields.string("schedule");
  std::string known;
  for (ScheduleKind kind : allScheduleKinds()) {
    if (name == scheduleName(kind)) return kind;
    known += (known.empty() ? "" : ", ") + std::string(scheduleName(kind));
  }
  fields.fail("schedule", "is " + json(name).dump() + "; expected one of " + known);
}

PlanRowFigures rowFromJson(const json& item, const std::string& where, int stages, ScheduleKind schedule) {
  const JsonFields fields(item, where);
  PlanRowFigures row;
  row.microbatch_size = fields.integer("microbatch_size", 1, kMaxCount);
  row.microbatches = fields.integer("microbatches", 1, kMaxCount);
  row.measured = fields.boolean("measured");
  // Written only for a chunked split, whose layers_per_stage lists its N x v chunks, placed as
  // the document's schedule places them.
  const int chunks = fields.has("chunks") ? fields.integer("chunks", 2, kMaxCount / stages) : 1;
  row.placement = Placement{stages, chunks, chunks > 1 ? chunkStyle(schedule) : Placement::Style::kLoop};
  fields.requireEntries("layers_per_stage", static_cast<std::size_t>(row.placement.chunkCount()),
                        row.placement.chunked() ? "one per chunk, stages x chunks" : "one per stage");
  row.layers_per_stage = fields.integerList("layers_per_stage", 1, kMaxCount);
  row.bottleneck_ms = fields.nonNegative("bottleneck_ms");
  row.step_ms = fields.nonNegative("predicted_step_ms");
  row.bubble = fields.fraction("bubble");
  fields.requireEntries("peak_memory_bytes", static_cast<std::size_t>(stages), "one per stage");
  row.peak_memory_bytes = fields.countList("peak_memory_bytes");
  row.feasible = fields.boolean("feasible");
  if (fields.has("overflow")) {
    // The writer gives it only to a row over its cap, so a feasible row with one reads back
    // to another document.
    if (row.feasible) fields.fail("overflow", "is given on a feasible row; only a row over its memory cap has one");
    const JsonFields overflow = fields.object("overflow");
    row.overflow_stage = overflow.integer("stage", 0, stages - 1);
    row.overflow_bytes = overflow.count("bytes");
  }
  row.samples_per_s = fields.nonNegative("samples_per_s");
  return row;
}

LayerFitReport layerFitFromJson(const json& item, const std::string& where, std::size_t position) {
  const JsonFields fields(item, where);
  LayerFitReport fit;
  fit.index = fields.integer("index", 0, kMaxCount);
  if (static_cast<std::size_t>(fit.index) != position) {
    fields.fail("index", "is " + std::to_string(fit.index) + ", expected " + std::to_string(position) +
                             "; the fits list every layer once, in order");
  }
  fit.name = fields.string("name");
  fit.fits_line = fields.boolean("fits_line");
  fit.forward = fitFromJson(fields, "forward_ms");
  fit.backward = fitFromJson(fields, "backward_ms");
  fit.activation = fitFromJson(fields, "activation_bytes");
  return fit;
}

}  // namespace

PlanDocument planDocument(const MicrobatchPlan& plan) {
  PlanDocument document;
  document.global_batch = plan.request.global_batch;
  document.stages = plan.request.partition.placement.ranks;
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
    if (row.placement.chunked()) item["chunks"] = row.placement.chunks_per_rank;
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

PlanDocument planFromJson(const json& document, const std::string& source) {
  requireDocumentFormat(document, source, kPlanFormat, "stagecut plan PROFILE --stages N --global-batch G -o FILE");
  const JsonFields top(document, source);
  PlanDocument plan;
  plan.global_batch = top.integer("global_batch", 1, kMaxCount);
  plan.stages = top.integer("stages", 1, kMaxCount);
  plan.schedule = scheduleFromJson(top);
  plan.measured_sizes = top.integerList("measured_sizes", 1, kMaxCount);
  plan.fit_tolerance = top.nonNegative("fit_tolerance");
  const json& rows = top.array("rows");
  // The planner refuses a global batch with no size to plan instead of writing an empty plan.
  if (rows.empty()) top.fail("rows", "is empty; a plan has at least one planned microbatch size");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    plan.rows.push_back(rowFromJson(rows[i], source + ": row " + std::to_string(i), plan.stages, plan.schedule));
  }
  if (!top.isNull("best")) plan.best = top.integer("best", 0, static_cast<int>(plan.rows.size()) - 1);
  const json& skipped = top.array("skipped");
  for (std::size_t i = 0; i < skipped.size(); ++i) {
    const JsonFields fields(skipped[i], source + ": skipped " + std::to_string(i));
    plan.skipped.push_back({fields.integer("microbatch_size", 1, kMaxCount), fields.string("reason")});
  }
  const json& fits = top.array("fits");
  for (std::size_t i = 0; i < fits.size(); ++i) {
    plan.fits.push_back(layerFitFromJson(fits[i], source + ": fit " + std::to_string(i), i));
  }
  return plan;
}

}  // namespace stagecut
