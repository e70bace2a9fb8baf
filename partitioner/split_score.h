#pragma once

#include <vector>

#include "partitioner/cost_model.h"

namespace stagecut {

/// How the exact solvers rank splits, in order: the slowest stage (bottleneck_ms), then the sum
/// of the stage costs (which, at a fixed bottleneck, orders the predicted step time
/// sum + (M - 1) x bottleneck), then the sum of squared stage costs (the most even split), then
/// fewer layers in earlier stages. Values within a relative 1e-9 count as equal, so sums that
/// differ only by rounding do not decide.
struct SplitScore {
  double bottleneck_ms = 0.0;
  double sum_ms = 0.0;
  double sum_squares_ms2 = 0.0;
};

/// Whether a and b differ by no more than the solvers' relative tolerance.
bool nearlyEqual(double a, double b);

/// Whether `a` is strictly smaller than `b` beyond the tolerance.
bool clearlyLess(double a, double b);

/// Whether (sum, sum of squares) of `a` is clearly better than that of `b` (bottleneck ignored).
bool tailBetter(const SplitScore& a, const SplitScore& b);

/// Whether `a` ranks clearly better than `b` on bottleneck, then sum, then sum of squares.
bool scoreBetter(const SplitScore& a, const SplitScore& b);

/// Score of a split given as layers per stage. Throws Error (input) when the counts do not
/// cover the chain with one non-empty stage per model stage.
SplitScore scoreSplit(const CostModel& model, const std::vector<int>& layers_per_stage);

/// No split's bottleneck is below this, ms: max(total compute / sum of stage speeds, largest
/// layer / fastest speed); with equal speeds of 1, max(total / N, largest layer).
double bottleneckLowerBoundMs(const CostModel& model);

/// Whether every stage of the split fits its memory cap.
bool splitFitsMemory(const CostModel& model, const std::vector<int>& layers_per_stage);

/// Throws Error (input) unless `layers_per_stage` has one positive count per stage summing to
/// the layer count; `what` names the split in the message.
void checkSplitShape(const std::vector<int>& layers_per_stage, int layers, int stages,
                     const char* what);

}  // namespace stagecut
