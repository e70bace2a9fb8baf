#include "partitioner/exact_solver.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/error.h"
#include "core/units.h"
#include "partitioner/split_score.h"

namespace stagecut {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
// The bisection stops when the bracket is this narrow, relative: far below SplitScore's
// tolerance, so the split found at the upper end has the optimal bottleneck.
constexpr double kBracketPrecision = 1e-13;

bool probe(const CostModel& model, double limit_ms, bool greedy) {
  return greedy ? probeGreedy(model, limit_ms, nullptr) : probeReachable(model, limit_ms, nullptr);
}

// No stage of any split costs more than this.
double upperBoundMs(const CostModel& model) { return model.stageCostUpperBoundMs(); }

struct TailEntry {
  SplitScore score{0.0, kInfinity, kInfinity};
  bool valid() const { return std::isfinite(score.sum_ms); }
};

}  // namespace

std::vector<int> bestSplitWithinLimit(const CostModel& model, double limit_ms,
                                      const std::vector<EndWindow>& windows) {
  const int layers = model.layerCount();
  const int stages = model.stageCount();
  if (static_cast<int>(windows.size()) != stages) return {};
  const EndWindow& final_window = windows[stages - 1];
  if (final_window.lo > layers - 1 || final_window.hi < layers - 1) return {};
  for (const EndWindow& window : windows) {
    if (window.lo > window.hi) return {};
  }

  // tail[s][j - lo]: best score of stages s+1.. when stage s ends at layer j.
  std::vector<std::vector<TailEntry>> tail(stages);
  for (int s = 0; s < stages; ++s) tail[s].resize(windows[s].hi - windows[s].lo + 1);
  tail[stages - 1][layers - 1 - final_window.lo].score = SplitScore{0.0, 0.0, 0.0};

  // The cost of stage s over first..last, or +inf when it breaks the limit or its cap.
  auto stageCost = [&](int s, int first, int last) {
    const double cost = model.stageCostMs(s, first, last);
    return cost <= limit_ms && model.fitsMemory(s, first, last) ? cost : kInfinity;
  };
  auto computeBeyondLimit = [&](int s, int first, int last) {
    return model.computeMs(first, last) > limit_ms * model.costs().stage_speed[s];
  };
  auto extend = [](const TailEntry& rest, double cost) {
    return SplitScore{0.0, rest.score.sum_ms + cost, rest.score.sum_squares_ms2 + cost * cost};
  };

  for (int s = stages - 2; s >= 0; --s) {
    const EndWindow& next = windows[s + 1];
    for (int j = windows[s].lo; j <= windows[s].hi; ++j) {
      TailEntry best;
      if (!model.canEndAt(j)) {
        tail[s][j - windows[s].lo] = best;  // no stage may end here: stays invalid
        continue;
      }
      for (int k = std::max(j + 1, next.lo); k <= next.hi; ++k) {
        if (computeBeyondLimit(s + 1, j + 1, k)) break;
        const TailEntry& rest = tail[s + 1][k - next.lo];
        if (!rest.valid()) continue;
        const double cost = stageCost(s + 1, j + 1, k);
        if (!std::isfinite(cost)) continue;
        const SplitScore candidate = extend(rest, cost);
        if (tailBetter(candidate, best.score)) best.score = candidate;
      }
      tail[s][j - windows[s].lo] = best;
    }
  }

  // Walk forward, taking at each stage the earliest end whose score matches the best.
  std::vector<int> layers_per_stage;
  int first = 0;
  SplitScore target{0.0, kInfinity, kInfinity};
  for (int s = 0; s < stages; ++s) {
    const EndWindow& window = windows[s];
    if (s == 0) {
      for (int j = window.lo; j <= window.hi; ++j) {
        if (computeBeyondLimit(0, 0, j)) break;
        const TailEntry& rest = tail[0][j - window.lo];
        const double cost = rest.valid() ? stageCost(0, 0, j) : kInfinity;
        if (!std::isfinite(cost)) continue;
        const SplitScore candidate = extend(rest, cost);
        if (tailBetter(candidate, target)) target = candidate;
      }
      if (!std::isfinite(target.sum_ms)) return {};
    }
    int chosen = -1;
    for (int j = std::max(first, window.lo); j <= window.hi && chosen < 0; ++j) {
      if (computeBeyondLimit(s, first, j)) break;
      const TailEntry& rest = tail[s][j - window.lo];
      const double cost = rest.valid() ? stageCost(s, first, j) : kInfinity;
      if (!std::isfinite(cost)) continue;
      if (!tailBetter(target, extend(rest, cost))) chosen = j;
    }
    if (chosen < 0) return {};
    target = tail[s][chosen - window.lo].score;
    layers_per_stage.push_back(chosen - first + 1);
    first = chosen + 1;
  }
  return layers_per_stage;
}

void throwMemoryInfeasible(const CostModel& model) {
  const int layers = model.layerCount();
  const int stages = model.stageCount();
  // A stage that cannot take even the smallest single layer it could hold.
  for (int s = 0; s < stages; ++s) {
    int smallest = s;
    for (int k = s; k <= layers - stages + s; ++k) {
      if (model.memoryBytes(s, k, k) < model.memoryBytes(s, smallest, smallest)) smallest = k;
    }
    const double need = model.memoryBytes(s, smallest, smallest);
    if (need > model.capBytes(s)) {
      throw Error("--memory-cap: stage " + std::to_string(s) + " cannot hold even one layer: " +
                  "the smallest it could take, layer " + std::to_string(smallest) + ", needs " +
                  formatBytes(static_cast<std::uint64_t>(need)) + ", " +
                  formatBytes(static_cast<std::uint64_t>(need - model.capBytes(s))) +
                  " over its cap of " + formatBytes(static_cast<std::uint64_t>(model.capBytes(s))) +
                  (model.recomputes() ? "; raise the cap or use a smaller microbatch"
                                      : "; raise the cap, use --recompute full or a smaller microbatch"));
    }
  }
  // Otherwise: the smallest extra allowance, added to every cap, that lets some split fit.
  ChainCosts relaxed = model.costs();
  double lo = 0.0, hi = 0.0;
  for (int s = 0; s < stages; ++s) hi = std::max(hi, model.memoryBytes(s, 0, layers - 1));
  auto fitsWithExtra = [&](double extra) {
    for (int s = 0; s < stages; ++s) relaxed.memory_cap_bytes[s] = model.capBytes(s) + extra;
    return probeReachable(CostModel(relaxed), kInfinity, nullptr);
  };
  while (hi - lo > 1.0) {
    const double mid = lo + (hi - lo) / 2;
    if (fitsWithExtra(mid)) hi = mid; else lo = mid;
  }
  for (int s = 0; s < stages; ++s) relaxed.memory_cap_bytes[s] = model.capBytes(s) + hi;
  const CostModel closest_model(relaxed);
  const std::vector<int> closest =
      bestSplitWithinLimit(closest_model, kInfinity, feasibleEndWindows(closest_model, kInfinity));
  int worst_stage = 0, first = 0, worst_first = 0;
  double worst_excess = -kInfinity;
  for (int s = 0; s < static_cast<int>(closest.size()); ++s) {
    const int last = first + closest[s] - 1;
    const double excess = model.memoryBytes(s, first, last) - model.capBytes(s);
    if (excess > worst_excess) {
      worst_excess = excess;
      worst_stage = s;
      worst_first = first;
    }
    first = last + 1;
  }
  const int worst_last = worst_first + (closest.empty() ? 0 : closest[worst_stage] - 1);
  throw Error("--memory-cap: no split into " + std::to_string(stages) + " stages fits; the " +
              "closest puts layers " + std::to_string(worst_first) + "-" +
              std::to_string(worst_last) + " on stage " + std::to_string(worst_stage) + ", " +
              formatBytes(static_cast<std::uint64_t>(model.memoryBytes(worst_stage, worst_first, worst_last))) +
              ", " + formatBytes(static_cast<std::uint64_t>(std::max(0.0, worst_excess))) +
              " over its cap of " +
              formatBytes(static_cast<std::uint64_t>(model.capBytes(worst_stage))) +
              (model.recomputes() ? "; raise the cap, use more stages or a smaller microbatch"
                                  : "; raise the cap, use more stages, --recompute auto or a smaller microbatch"));
}

std::vector<int> solveExactSplit(const CostModel& model, ProbeChoice choice) {
  const int stages = model.stageCount();
  if (stages > model.layerCount()) {
    throw Error("--stages " + std::to_string(stages) + ": the profile has " +
                std::to_string(model.layerCount()) + " layers; use --stages " +
                std::to_string(model.layerCount()) + " or fewer");
  }
  if (model.restrictsCuts()) {
    int cuts = 0;
    for (int last = 0; last + 1 < model.layerCount(); ++last) cuts += model.canEndAt(last) ? 1 : 0;
    if (stages > cuts + 1) {
      throw Error("--stages " + std::to_string(stages) + ": the cuts the rules allow make at most " +
                  std::to_string(cuts + 1) + " stages; use --stages " + std::to_string(cuts + 1) + " or fewer");
    }
  }
  const bool greedy = choice == ProbeChoice::kGreedy ||
                      (choice == ProbeChoice::kAuto && greedyProbeIsExact(model));
  if (!probe(model, kInfinity, greedy)) throwMemoryInfeasible(model);

  const double lower = bottleneckLowerBoundMs(model);
  double hi = std::max(upperBoundMs(model), lower);
  if (probe(model, lower, greedy)) {
    hi = lower;
  } else {
    double lo = lower;  // infeasible; the optimum lies in (lo, hi]
    while (hi - lo > kBracketPrecision * hi) {
      const double mid = lo + (hi - lo) / 2;
      if (mid <= lo || mid >= hi) break;
      if (probe(model, mid, greedy)) hi = mid; else lo = mid;
    }
  }
  // Rounding in the probe's shortcuts may, rarely, leave the limit a hair too tight for the
  // windows' own arithmetic: widen by a relative 1e-12 and retry once.
  for (double limit : {hi, hi * (1 + 1e-12)}) {
    std::vector<EndWindow> windows = feasibleEndWindows(model, limit);
    std::vector<int> split = bestSplitWithinLimit(model, limit, windows);
    if (!split.empty()) return split;
  }
  throw Error("partitioner: internal inconsistency: a feasible bottleneck of " + formatMs(hi) +
              " ms yielded no split; please report it with the profile", ErrorKind::kRuntime);
}

}  // namespace stagecut
