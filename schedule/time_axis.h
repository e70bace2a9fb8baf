#pragma once

namespace stagecut {

/// The smallest "nice" step (1, 2, 2.5 or 5 times a power of ten) that is at least `at_least`:
/// what the Gantt charts use for time per column and between axis ticks, so labels read well.
/// Returns 1 for `at_least` <= 0 or not finite.
double niceStep(double at_least);

/// A tick label for time `t` on an axis whose ticks are `step` apart: "12", "2.5", "0.25".
const char* formatTick(double t, double step, char* buffer, int size);

}  // namespace stagecut
