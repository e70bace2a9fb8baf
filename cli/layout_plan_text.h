#pragma once

// What `plan --gpus` prints: the search's scope and time, the ranked layouts with why each is
// behind the first, and the winner in the framework's words.

#include <ostream>
#include <string>

#include "planner/layout_search.h"

namespace stagecut {

/// The winner in the framework's own words: Megatron's flags or torchtitan's settings; a line
/// saying why not where the framework cannot express its split.
std::string frameworkText(const PlanInputs& inputs, const LayoutFigures& best);

/// The human report of `plan` (the pinned search's with --fix; `free_plan` then the unpinned
/// search's, set beside it).
void printLayoutPlan(std::ostream& out, const PlanInputs& inputs, const LayoutPlan& plan, const std::string& pinned,
                     const LayoutPlan* free_plan);

}  // namespace stagecut
