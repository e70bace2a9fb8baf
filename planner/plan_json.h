#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "planner/microbatch_plan.h"
#include "schedule/schedule_kind.h"

namespace stagecut {

/// Format tag of `stagecut plan --json`.
inline constexpr const char* kPlanFormat = "stagecut.plan/1";

/// What stagecut.plan/1 holds of a plan: the request's shape, each planned size's figures (its
/// split as layer counts), the best row, the sizes not planned and every layer's fitted lines.
struct PlanDocument {
  int global_batch = 0;  ///< G samples per step over all replicas
  int stages = 0;
  ScheduleKind schedule = ScheduleKind::kOneFOneB;
  std::vector<int> measured_sizes;
  double fit_tolerance = 0.0;
  std::vector<PlanRowFigures> rows;  ///< ascending microbatch size
  int best = -1;  ///< index into rows of the fastest feasible row; -1 (null) when none fits
  std::vector<SkippedSize> skipped;
  std::vector<LayerFitReport> fits;  ///< one per layer, in order
};

/// The document of a plan (the rows' splits reduced to their layer counts).
PlanDocument planDocument(const MicrobatchPlan& plan);

/// The `stagecut.plan/1` document: `rows` (per planned microbatch size: microbatch_size,
/// microbatches, measured, chunks (v per rank, only when over 1), layers_per_stage (per chunk when
/// chunked), bottleneck_ms, predicted_step_ms, bubble, peak_memory_bytes per stage (rank),
/// feasible, overflow, samples_per_s), `best` (index or null),
/// `skipped` sizes with the reason, and the layers' fitted lines.
nlohmann::json planToJson(const PlanDocument& document);

/// Reads a `stagecut.plan/1` document back to what writes the same bytes through planToJson().
/// Throws Error (input) with one line naming `source`, the row, skipped size or layer fit and
/// the field for another format, a missing field or one of the wrong type, an unknown schedule,
/// negative times or counts, a bubble above 1, no rows, per-stage lists without one entry per
/// stage, an overflow on a feasible row or outside the stages, fits out of layer order, or a
/// `best` that is not a row.
PlanDocument planFromJson(const nlohmann::json& document, const std::string& source);

}  // namespace stagecut
