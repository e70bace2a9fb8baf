#pragma once

#include <functional>
#include <ostream>

#include "cli/progress_bar.h"
#include "core/profile.h"
#include "profiler/profile_request.h"

namespace stagecut {

/// Prints a measured profile as `stagecut profile` shows it: a heading with the model and the
/// device, a row per layer (fwd, B, W, bwd, cv, params, activation, output) and the whole-model
/// check.
void printProfileTable(std::ostream& out, const Profile& profile);

/// Shows the profiler's rounds on `bar`: round, layer k of L, elapsed and remaining time.
std::function<void(const MeasureProgress&)> profileProgressReporter(ProgressBar& bar);

}  // namespace stagecut
