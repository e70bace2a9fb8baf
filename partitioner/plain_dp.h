#pragma once

#include <vector>

#include "partitioner/cost_model.h"

namespace stagecut {

/// The textbook O(N L^2) dynamic program for the same objective as solveExactSplit: first the
/// min-max table over every (stage, end, start), then the tie-breaking search over all ends.
/// Exact and simple, and slow: kept as the reference the benchmark measures the fast solver
/// against. Throws Error (input) like solveExactSplit when no split fits the caps.
std::vector<int> solvePlainDp(const CostModel& model);

/// The optimal bottleneck alone from the O(N L^2) table, ms; +infinity when no split fits.
double plainDpBottleneckMs(const CostModel& model);

}  // namespace stagecut
