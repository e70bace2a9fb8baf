#pragma once

// `stagecut plan --gpus G --json` prints stagecut.layout-plan/1: what was searched, the ranked
// layouts with their figures and split, why the others cannot run (counted by kind), and the
// winner under `best` with its framework text. Written here and nowhere else.

#include <nlohmann/json.hpp>

#include "planner/layout_search.h"

namespace stagecut {

/// Format tag of `plan --gpus --json` documents.
inline constexpr const char* kLayoutPlanFormat = "stagecut.layout-plan/1";

/// The document of `plan` (the search's answer for `inputs`); `framework_text` is the winner in
/// the framework's words ("" when there is none), `pinned` the --fix text as given ("" without).
nlohmann::json layoutPlanToJson(const PlanInputs& inputs, const LayoutPlan& plan, const std::string& framework_text,
                                const std::string& pinned);

}  // namespace stagecut
