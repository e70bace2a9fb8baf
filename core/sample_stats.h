#pragma once

#include <vector>

#include "core/profile.h"

namespace stagecut {

/// Reduces repeated timings (ms) to median, min, max and coefficient of variation
/// (sample standard deviation / mean). An empty list gives all zeros.
TimeStatsMs summarizeSamples(std::vector<double> samples_ms);

/// The median of `values` as summarizeSamples() takes it (the mean of the two middle values of an
/// even count); 0 for an empty list. Units are the caller's.
double medianOf(std::vector<double> values);

}  // namespace stagecut
