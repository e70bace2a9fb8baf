#include "partitioner/bottleneck_probe.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>

namespace stagecut {

namespace {

// Bounds from compute alone only prune; a margin keeps rounding from pruning a valid end.
constexpr double kPruneMargin = 1e-9;

// Largest count c in [lo, hi] with prefix(c) <= value (prefix is non-decreasing); lo - 1 if none.
int lastPrefixAtMost(const CostModel& model, int lo, int hi, double value) {
  int answer = lo - 1;
  while (lo <= hi) {
    const int mid = lo + (hi - lo) / 2;
    if (model.computePrefixMs(mid) <= value) {
      answer = mid;
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  return answer;
}

// Smallest count c in [lo, hi] with prefix(c) >= value; hi + 1 if none.
int firstPrefixAtLeast(const CostModel& model, int lo, int hi, double value) {
  int answer = hi + 1;
  while (lo <= hi) {
    const int mid = lo + (hi - lo) / 2;
    if (model.computePrefixMs(mid) >= value) {
      answer = mid;
      hi = mid - 1;
    } else {
      lo = mid + 1;
    }
  }
  return answer;
}

}  // namespace

bool probeReachable(const CostModel& model, double limit_ms, std::vector<EndWindow>* windows) {
  const int layers = model.layerCount();
  const int stages = model.stageCount();
  if (stages > layers) return false;
  const bool finite_limit = std::isfinite(limit_ms);
  // Sliding windows need memory that grows with the range and a best start given by prefix sums.
  const bool monotone_memory = model.memoryIsMonotone() && model.separableCost();
  std::vector<double> speed_after(stages + 1, 0.0);  // sum of speeds of stages > s
  for (int s = stages - 1; s >= 0; --s) speed_after[s] = speed_after[s + 1] + model.costs().stage_speed[s];

  std::vector<char> previous(layers, 0), current(layers, 0);
  int previous_lo = -1, previous_hi = -1;  // stage -1 "ends" at -1: the first stage starts at 0
  if (windows) windows->assign(stages, EndWindow{});
  std::deque<int> starts;  // candidate starts, keys decreasing from front to back

  for (int s = 0; s < stages; ++s) {
    const double speed = model.costs().stage_speed[s];
    const int start_lo = previous_lo + 1;
    const int start_hi = previous_hi + 1;
    auto allowed = [&](int i) { return s == 0 ? i == 0 : previous[i - 1] != 0; };
    int end_lo = start_lo;
    int end_hi = layers - (stages - s);  // leave one layer to each later stage
    if (s == stages - 1) end_lo = layers - 1;
    if (finite_limit) {
      const double slack = 1 + kPruneMargin;
      // Compute alone must fit, even from the latest start...
      end_hi = std::min(end_hi, std::max(start_hi, lastPrefixAtMost(model, start_hi + 1, layers,
                                                                    model.computePrefixMs(start_hi) +
                                                                        limit_ms * speed * slack) - 1));
      // ...and the layers after it must fit into the later stages' compute capacity.
      end_lo = std::max(end_lo, firstPrefixAtLeast(model, 0, layers,
                                                   model.totalComputeMs() -
                                                       limit_ms * speed_after[s + 1] * slack) - 1);
    }
    int reach_lo = layers, reach_hi = -1;
    starts.clear();
    int next_start = start_lo;
    int memory_lo = start_lo;
    const double cap = model.capBytes(s);
    auto key = [&](int i) { return model.computePrefixMs(i) - model.commInMs(i); };
    for (int j = std::max(end_lo, start_lo); j <= end_hi; ++j) {
      bool reached = false;
      if (monotone_memory) {
        for (; next_start <= std::min(j, start_hi); ++next_start) {
          if (!allowed(next_start)) continue;
          while (!starts.empty() && key(starts.back()) <= key(next_start)) starts.pop_back();
          starts.push_back(next_start);
        }
        if (model.hasMemoryCaps()) {
          while (memory_lo <= j && model.growingMemoryBytes(s, memory_lo, j) > cap) ++memory_lo;
        }
        while (!starts.empty() && starts.front() < memory_lo) starts.pop_front();
        reached = !starts.empty() && model.stageCostMs(s, starts.front(), j) <= limit_ms;
      } else {
        // Recompute with caps (the kept input depends on the start alone), a per-stage recompute
        // choice or an all-reduce term: no window applies; scan starts backwards until the
        // growing part alone no longer fits.
        for (int i = std::min(j, start_hi); i >= start_lo && !reached; --i) {
          if (model.growingMemoryBytes(s, i, j) > cap) break;
          if (finite_limit && model.computeMs(i, j) > limit_ms * speed * (1 + kPruneMargin)) break;
          reached = allowed(i) && model.stageCostMs(s, i, j) <= limit_ms && model.fitsMemory(s, i, j);
        }
      }
      if (reached && model.canEndAt(j)) {
        current[j] = 1;
        reach_lo = std::min(reach_lo, j);
        reach_hi = j;
      }
    }
    if (previous_hi >= 0) std::fill(previous.begin() + previous_lo, previous.begin() + previous_hi + 1, 0);
    if (reach_hi < 0) return false;
    if (windows) (*windows)[s] = EndWindow{reach_lo, reach_hi};
    std::swap(previous, current);
    previous_lo = reach_lo;
    previous_hi = reach_hi;
  }
  return previous_hi == layers - 1;
}

bool greedyProbeIsExact(const CostModel& model) {
  if (model.hasCommunication() || !model.uniformSpeed() || !model.memoryIsMonotone() ||
      !model.separableCost() || model.restrictsCuts()) {
    return false;
  }
  if (!model.hasMemoryCaps()) return true;
  for (int s = 0; s < model.stageCount(); ++s) {
    for (int k = 0; k < model.layerCount(); ++k) {
      if (!model.fitsMemory(s, k, k)) return false;
    }
  }
  return true;
}

namespace {

bool stageFits(const CostModel& model, int stage, int first, int last, double limit_ms) {
  return model.stageCostMs(stage, first, last) <= limit_ms && model.fitsMemory(stage, first, last);
}

}  // namespace

bool probeGreedy(const CostModel& model, double limit_ms, std::vector<EndWindow>* windows) {
  const int layers = model.layerCount();
  const int stages = model.stageCount();
  if (stages > layers) return false;
  std::vector<int> farthest_end(stages);
  int first = 0;
  for (int s = 0; s < stages; ++s) {
    if (!stageFits(model, s, first, first, limit_ms)) return false;
    int lo = first, hi = layers - (stages - s);  // lo always fits
    while (lo < hi) {
      const int mid = hi - (hi - lo) / 2;
      if (stageFits(model, s, first, mid, limit_ms)) lo = mid; else hi = mid - 1;
    }
    if (s == stages - 1 && lo != layers - 1) return false;
    farthest_end[s] = lo;
    first = lo + 1;
  }
  if (!windows) return true;
  // From the back: the earliest start of each stage that still leaves the rest coverable.
  std::vector<int> earliest_start(stages + 1, layers);
  int last = layers - 1;
  for (int s = stages - 1; s >= 1; --s) {
    if (last < s || !stageFits(model, s, last, last, limit_ms)) return false;
    int lo = s, hi = last;  // hi fits
    while (lo < hi) {
      const int mid = lo + (hi - lo) / 2;
      if (stageFits(model, s, mid, last, limit_ms)) hi = mid; else lo = mid + 1;
    }
    earliest_start[s] = lo;
    last = lo - 1;
  }
  windows->assign(stages, EndWindow{});
  for (int s = 0; s < stages; ++s) {
    const int lo = s == stages - 1 ? layers - 1 : std::max(s, earliest_start[s + 1] - 1);
    (*windows)[s] = EndWindow{lo, farthest_end[s]};
  }
  return true;
}

std::vector<EndWindow> feasibleEndWindows(const CostModel& model, double limit_ms) {
  std::vector<EndWindow> forward;
  if (greedyProbeIsExact(model)) {
    if (!probeGreedy(model, limit_ms, &forward)) return {};
    return forward;
  }
  if (!probeReachable(model, limit_ms, &forward)) return {};
  if (!model.memoryIsMonotone() || !model.separableCost()) return forward;
  // The mirrored chain's reachable ends are the original's starts that leave a coverable rest.
  std::vector<EndWindow> backward;
  if (!probeReachable(model.reversed(), limit_ms * (1 + kPruneMargin), &backward)) return forward;
  const int layers = model.layerCount();
  const int stages = model.stageCount();
  for (int s = 1; s < stages; ++s) {
    const EndWindow& mirrored = backward[stages - 1 - s];  // ends of stage s in the mirror
    // Stage s starts in [L-1-hi, L-1-lo], so stage s-1 ends one layer earlier.
    EndWindow& window = forward[s - 1];
    window.lo = std::max(window.lo, layers - 2 - mirrored.hi);
    window.hi = std::min(window.hi, layers - 2 - mirrored.lo);
  }
  return forward;
}

}  // namespace stagecut
