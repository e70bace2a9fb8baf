#include "partitioner/plain_dp.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/error.h"
#include "partitioner/exact_solver.h"

namespace stagecut {

namespace {

// The bottleneck of a prefix no split of the given stage count can cover.
constexpr double kNoSplit = std::numeric_limits<double>::infinity();

}  // namespace

double plainDpBottleneckMs(const CostModel& model) {
  const int layers = model.layerCount();
  const int stages = model.stageCount();
  if (stages > layers) return kNoSplit;
  // best[j]: the smallest bottleneck of stages 0..s covering layers 0..j.
  std::vector<double> best(layers, kNoSplit), next(layers, kNoSplit);
  for (int j = 0; j < layers; ++j) {
    if (model.canEndAt(j) && model.fitsMemory(0, 0, j)) best[j] = model.stageCostMs(0, 0, j);
  }
  for (int s = 1; s < stages; ++s) {
    std::fill(next.begin(), next.end(), kNoSplit);
    for (int j = s; j < layers; ++j) {
      if (!model.canEndAt(j)) continue;
      for (int i = s; i <= j; ++i) {
        if (!std::isfinite(best[i - 1]) || !model.fitsMemory(s, i, j)) continue;
        next[j] = std::min(next[j], std::max(best[i - 1], model.stageCostMs(s, i, j)));
      }
    }
    std::swap(best, next);
  }
  return best[layers - 1];
}

std::vector<int> solvePlainDp(const CostModel& model) {
  const int layers = model.layerCount();
  const int stages = model.stageCount();
  if (stages > layers) {
    throw Error("--stages " + std::to_string(stages) + ": the profile has " +
                std::to_string(layers) + " layers; use --stages " + std::to_string(layers) +
                " or fewer");
  }
  const double bottleneck_ms = plainDpBottleneckMs(model);
  if (!std::isfinite(bottleneck_ms)) {
    if (model.restrictsCuts()) solveExactSplit(model);  // says which of the cuts or caps fail
    throwMemoryInfeasible(model);
  }
  std::vector<EndWindow> every_end(stages);
  for (int s = 0; s < stages; ++s) every_end[s] = EndWindow{s, layers - stages + s};
  return bestSplitWithinLimit(model, bottleneck_ms, every_end);
}

}  // namespace stagecut
