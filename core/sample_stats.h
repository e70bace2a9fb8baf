#pragma once

#include <vector>

#include "core/profile.h"

namespace stagecut {

/// Reduces repeated timings (ms) to median, min, max and coefficient of variation
/// (sample standard deviation / mean). An empty list gives all zeros.
TimeStatsMs summarizeSamples(std::vector<double> samples_ms);

}  // namespace stagecut
