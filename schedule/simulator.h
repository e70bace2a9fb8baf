#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schedule/pipeline_schedule.h"
#include "schedule/stage_costs.h"

namespace stagecut {

/// When one op ran, in ms (or unit slots) from the start of the step.
struct OpTiming {
  double start_ms = 0.0;
  double end_ms = 0.0;
};

/// One rank's share of a simulated step.
struct RankStats {
  double busy_ms = 0.0;  ///< time spent running F, B and W ops
  double idle_ms = 0.0;  ///< step time minus busy time: waiting, fill, drain and all-reduce
  double allreduce_ms = 0.0;  ///< time spent in all-reduce ops (communication, not compute)
  /// Most (microbatch, chunk) pairs alive at once: forward done, the op that frees the
  /// activations (B, or W where it is split off) not yet done.
  int peak_in_flight = 0;
  /// Most activation bytes alive at once, from the costs' activation_bytes (0 without them).
  std::uint64_t peak_activation_bytes = 0;
};

/// What the event simulator found for one schedule on one set of costs.
struct SimulationResult {
  std::string schedule;  ///< the schedule's name
  Placement placement;   ///< the schedule's ranks and chunks per rank
  int microbatches = 0;
  double step_ms = 0.0;  ///< when the last op of the step ends
  /// idle / (N x step time): the fraction of the pipeline's compute left idle. With all-reduce
  /// ops the step includes them and they count as idle compute (the 2D bubble: every replica
  /// runs the same timeline, so it is also the idle fraction of all N x D devices).
  double bubble = 0.0;
  std::vector<RankStats> ranks;
  /// op_times[r][i]: start and end of the i-th op of rank r's list.
  std::vector<std::vector<OpTiming>> op_times;
};

/// Runs a schedule on costs: each rank runs its ops in list order, one at a time; an op starts
/// when its rank is free and its inputs have arrived (F(m, s) after F(m, s-1) plus transfer;
/// B(m, s) after B(m, s+1) plus transfer and after F(m, s); W(m, s) after B(m, s); an
/// all-reduce A(c) after every B (or W) of chunk c on its rank, lasting costs.allreduce_ms).
/// Throws Error (input) when the schedule is incomplete, the costs do not fit it, or the lists
/// deadlock; the deadlock message names the ranks and ops that wait on each other.
SimulationResult simulate(const Schedule& schedule, const PipelineCosts& costs);

}  // namespace stagecut
