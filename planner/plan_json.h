#pragma once

#include <nlohmann/json.hpp>

#include "planner/microbatch_plan.h"

namespace stagecut {

/// Format tag of `stagecut plan --json`.
inline constexpr const char* kPlanFormat = "stagecut.plan/1";

/// The `stagecut.plan/1` document: `rows` (per planned microbatch size: microbatch_size,
/// microbatches, measured, layers_per_stage, bottleneck_ms, predicted_step_ms, bubble,
/// peak_memory_bytes per stage, feasible, overflow, samples_per_s), `best` (index or null),
/// `skipped` sizes with the reason, and the layers whose costs a line does not fit.
nlohmann::json planToJson(const MicrobatchPlan& plan);

}  // namespace stagecut
