#pragma once

#include <vector>

#include "partitioner/bottleneck_probe.h"
#include "partitioner/cost_model.h"

namespace stagecut {

/// Which feasibility probe the bisection uses. kAuto takes the O(N log L) greedy probe where it
/// is exact (greedyProbeIsExact) and the exact reachability probe elsewhere; tests force each.
enum class ProbeChoice { kAuto, kGreedy, kReachable };

/// The best split in the order of SplitScore (bottleneck, sum of stage costs, sum of squares,
/// then fewer layers in earlier stages), as layers per stage. Bisects on the bottleneck with the
/// chosen probe, then searches the windows of feasible ends for the tie-breaks. Throws Error
/// (input) when no split fits the memory caps, naming the stage and the excess.
std::vector<int> solveExactSplit(const CostModel& model, ProbeChoice probe = ProbeChoice::kAuto);

/// Among splits whose stages all cost at most `limit_ms`, fit their caps and end inside
/// `windows`, the best by sum, then sum of squares, then fewer layers earlier; empty if none.
/// O(sum over stages of |window s| x |window s+1|).
std::vector<int> bestSplitWithinLimit(const CostModel& model, double limit_ms,
                                      const std::vector<EndWindow>& windows);

/// Throws Error (input) explaining why no split of the model fits its memory caps: a stage that
/// cannot hold even one layer, or the extra bytes the closest split needs and where.
[[noreturn]] void throwMemoryInfeasible(const CostModel& model);

}  // namespace stagecut
