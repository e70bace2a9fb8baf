#pragma once

#include <vector>

#include "partitioner/cost_model.h"

namespace stagecut {

/// Inclusive range of layer indices where a stage may end; empty when lo > hi.
struct EndWindow {
  int lo = 0;
  int hi = -1;
};

/// Whether the chain splits into the model's stages with every stage costing at most
/// `limit_ms` and fitting its memory cap. Exact for any cost model: it tracks, stage by stage,
/// every layer at which the stages so far can end, and finds for each candidate end the best
/// start with a sliding-window maximum of (prefix compute - incoming comm) over the starts whose
/// memory fits (O(L) per stage, less where compute bounds prune). On success and when `windows`
/// is given, fills each stage's range of reachable ends.
bool probeReachable(const CostModel& model, double limit_ms, std::vector<EndWindow>* windows);

/// Whether the greedy "each stage as far as it can" probe is exact for this model: no
/// communication, equal stage speeds, memory that grows with the range, and every layer
/// fitting every stage's cap alone. Then the reachable ends of each stage form one interval.
bool greedyProbeIsExact(const CostModel& model);

/// The greedy probe, O(N log L): each stage takes the farthest end it can (binary search), and
/// a mirrored pass from the back finds the earliest starts. Only exact when
/// greedyProbeIsExact(model). On success fills the windows of ends that are both reachable from
/// the front and leave a feasible rest.
bool probeGreedy(const CostModel& model, double limit_ms, std::vector<EndWindow>* windows);

/// Windows of ends that are both reachable from the front and leave a coverable rest under
/// `limit_ms`, for the tie-breaking search; a superset where only bounds are cheap.
std::vector<EndWindow> feasibleEndWindows(const CostModel& model, double limit_ms);

}  // namespace stagecut
