#include "partitioner/split_score.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"

namespace stagecut {

namespace {

// Sums of a few thousand doubles carry relative rounding near 1e-13; 1e-9 is far above that and
// far below any difference a person would act on.
constexpr double kRelativeTolerance = 1e-9;

}  // namespace

bool nearlyEqual(double a, double b) {
  if (a == b) return true;  // also equal infinities
  if (!std::isfinite(a) || !std::isfinite(b)) return false;
  return std::fabs(a - b) <= kRelativeTolerance * std::max({1.0, std::fabs(a), std::fabs(b)});
}

bool clearlyLess(double a, double b) { return a < b && !nearlyEqual(a, b); }

bool tailBetter(const SplitScore& a, const SplitScore& b) {
  if (!nearlyEqual(a.sum_ms, b.sum_ms)) return a.sum_ms < b.sum_ms;
  return clearlyLess(a.sum_squares_ms2, b.sum_squares_ms2);
}

bool scoreBetter(const SplitScore& a, const SplitScore& b) {
  if (!nearlyEqual(a.bottleneck_ms, b.bottleneck_ms)) return a.bottleneck_ms < b.bottleneck_ms;
  return tailBetter(a, b);
}

void checkSplitShape(const std::vector<int>& layers_per_stage, int layers, int stages,
                     const char* what) {
  if (static_cast<int>(layers_per_stage.size()) != stages) {
    throw Error(std::string(what) + ": " + std::to_string(layers_per_stage.size()) +
                " stages, expected " + std::to_string(stages));
  }
  long long total = 0;
  for (std::size_t s = 0; s < layers_per_stage.size(); ++s) {
    if (layers_per_stage[s] < 1) {
      throw Error(std::string(what) + ": stage " + std::to_string(s) + " has " +
                  std::to_string(layers_per_stage[s]) + " layers; every stage needs at least one");
    }
    total += layers_per_stage[s];
  }
  if (total != layers) {
    throw Error(std::string(what) + ": the stages hold " + std::to_string(total) +
                " layers, the chain has " + std::to_string(layers));
  }
}

SplitScore scoreSplit(const CostModel& model, const std::vector<int>& layers_per_stage) {
  checkSplitShape(layers_per_stage, model.layerCount(), model.stageCount(), "split");
  SplitScore score;
  int first = 0;
  for (int s = 0; s < model.stageCount(); ++s) {
    const int last = first + layers_per_stage[s] - 1;
    const double cost = model.stageCostMs(s, first, last);
    score.bottleneck_ms = std::max(score.bottleneck_ms, cost);
    score.sum_ms += cost;
    score.sum_squares_ms2 += cost * cost;
    first = last + 1;
  }
  return score;
}

double bottleneckLowerBoundMs(const CostModel& model) {
  const auto& speeds = model.costs().stage_speed;
  double speed_sum = 0.0;
  for (double speed : speeds) speed_sum += speed;
  const double fastest = *std::max_element(speeds.begin(), speeds.end());
  const auto& compute = model.costs().compute_ms;
  const double largest = *std::max_element(compute.begin(), compute.end());
  return std::max(model.totalComputeMs() / speed_sum, largest / fastest);
}

bool splitFitsMemory(const CostModel& model, const std::vector<int>& layers_per_stage) {
  int first = 0;
  for (int s = 0; s < model.stageCount(); ++s) {
    const int last = first + layers_per_stage[s] - 1;
    if (!model.fitsMemory(s, first, last)) return false;
    first = last + 1;
  }
  return true;
}

}  // namespace stagecut
