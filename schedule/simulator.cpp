#include "schedule/simulator.h"

#include <algorithm>
#include <limits>

#include "core/error.h"
#include "schedule/generators.h"

namespace stagecut {

namespace {

constexpr int kNoRank = -1;

// The simulator's view of one op's identity: which F, B or W of which microbatch on which
// model stage. Indexes the flat arrays of end times and waiting ranks.
class OpSlots {
 public:
  OpSlots(int model_stages, int microbatches)
      : model_stages_(model_stages), microbatches_(microbatches) {}
  std::size_t count() const {
    return 4 * static_cast<std::size_t>(model_stages_) * microbatches_;
  }
  std::size_t of(OpKind kind, int model_stage, int microbatch) const {
    return (static_cast<std::size_t>(kind) * model_stages_ + model_stage) * microbatches_ +
           microbatch;
  }

 private:
  int model_stages_;
  int microbatches_;
};

// An input an op waits for: another op, on `rank`, whose result needs `transfer_ms` to arrive.
struct Dependency {
  std::size_t slot = 0;
  int rank = 0;
  double transfer_ms = 0.0;
  PipelineOp op;
};

class Simulation {
 public:
  Simulation(const Schedule& schedule, const PipelineCosts& costs)
      : schedule_(schedule),
        placement_(schedule.placement),
        costs_(costs),
        slots_(schedule.placement.chunkCount(), schedule.microbatches),
        end_ms_(slots_.count(), kNotDone),
        waiting_rank_(slots_.count(), kNoRank),
        position_(schedule.placement.ranks, 0),
        free_at_ms_(schedule.placement.ranks, 0.0),
        blocked_on_(schedule.placement.ranks) {}

  SimulationResult run() {
    SimulationResult result;
    result.schedule = schedule_.name;
    result.placement = schedule_.placement;
    result.microbatches = schedule_.microbatches;
    result.ranks.resize(schedule_.placement.ranks);
    result.op_times.resize(schedule_.placement.ranks);
    for (int rank = 0; rank < schedule_.placement.ranks; ++rank) {
      result.op_times[rank].resize(schedule_.ranks[rank].size());
    }
    std::vector<int> ready;
    for (int rank = schedule_.placement.ranks - 1; rank >= 0; --rank) ready.push_back(rank);
    while (!ready.empty()) {
      const int rank = ready.back();
      ready.pop_back();
      advance(rank, &result, &ready);
    }
    for (int rank = 0; rank < schedule_.placement.ranks; ++rank) {
      if (position_[rank] < schedule_.ranks[rank].size()) throw deadlock(rank);
    }
    summarize(&result);
    return result;
  }

 private:
  static constexpr double kNotDone = -1.0;

  // Runs rank's ops until one waits for an input that is not done yet.
  void advance(int rank, SimulationResult* result, std::vector<int>* ready) {
    const RankOps& ops = schedule_.ranks[rank];
    std::vector<OpTiming>& times = result->op_times[rank];
    Dependency inputs[2];
    while (position_[rank] < ops.size()) {
      const PipelineOp& op = ops[position_[rank]];
      const int stage = schedule_.placement.chunkAt(rank, op.chunk);
      double start_ms = free_at_ms_[rank];
      if (op.kind == OpKind::kAllReduce) {
        // The chunk's gradients are complete once every one of its B (or W) ops is done; those
        // run on this rank, so one not done yet comes later in the list.
        const OpKind last_kind = schedule_.splits_backward ? OpKind::kWeight : OpKind::kBackward;
        for (int m = 0; m < schedule_.microbatches; ++m) {
          const double input_end_ms = end_ms_[slots_.of(last_kind, stage, m)];
          if (input_end_ms == kNotDone) {
            blocked_on_[rank] = {slots_.of(last_kind, stage, m), rank, 0.0, {last_kind, m, op.chunk}};
            return;
          }
          start_ms = std::max(start_ms, input_end_ms);
        }
      }
      const int input_count = dependencies(rank, op, stage, inputs);
      for (int i = 0; i < input_count; ++i) {
        const double input_end_ms = end_ms_[inputs[i].slot];
        if (input_end_ms == kNotDone) {
          blocked_on_[rank] = inputs[i];
          if (inputs[i].rank != rank) waiting_rank_[inputs[i].slot] = rank;
          return;
        }
        start_ms = std::max(start_ms, input_end_ms + inputs[i].transfer_ms);
      }
      const double end_ms = start_ms + duration(op, stage);
      times[position_[rank]] = {start_ms, end_ms};
      free_at_ms_[rank] = end_ms;
      const std::size_t slot = slots_.of(op.kind, stage, op.microbatch);
      end_ms_[slot] = end_ms;
      if (waiting_rank_[slot] != kNoRank) {
        ready->push_back(waiting_rank_[slot]);
        waiting_rank_[slot] = kNoRank;
      }
      ++position_[rank];
    }
  }

  int dependencies(int rank, const PipelineOp& op, int stage, Dependency* inputs) const {
    const int m = op.microbatch;
    const int last_stage = schedule_.placement.chunkCount() - 1;
    switch (op.kind) {
      case OpKind::kForward:
        if (stage == 0) return 0;
        inputs[0] = across(rank, OpKind::kForward, stage - 1, m, stage - 1);
        return 1;
      case OpKind::kBackward:
        inputs[0] = {slots_.of(OpKind::kForward, stage, m), rank, 0.0,
                     {OpKind::kForward, m, op.chunk}};
        if (stage == last_stage) return 1;
        inputs[1] = across(rank, OpKind::kBackward, stage + 1, m, stage);
        return 2;
      case OpKind::kWeight:
        inputs[0] = {slots_.of(OpKind::kBackward, stage, m), rank, 0.0,
                     {OpKind::kBackward, m, op.chunk}};
        return 1;
      case OpKind::kAllReduce:
        return 0;  // its inputs, the chunk's M gradient ops, are checked in advance()
    }
    return 0;
  }

  // An input from model stage `from_stage`, crossing boundary `boundary` (s -> s + 1).
  Dependency across(int rank, OpKind kind, int from_stage, int m, int boundary) const {
    const int from_rank = placement_.rankOf(from_stage);
    const double transfer_ms =
        from_rank == rank || costs_.comm_ms.empty() ? 0.0 : costs_.comm_ms[boundary];
    return {slots_.of(kind, from_stage, m), from_rank, transfer_ms, {kind, m, placement_.localOf(from_stage)}};
  }

  double duration(const PipelineOp& op, int stage) const {
    const StageOpCosts& cost = costs_.stages[stage];
    switch (op.kind) {
      case OpKind::kForward:
        return cost.forward_ms;
      case OpKind::kBackward:
        return schedule_.splits_backward ? cost.backward_input_ms : cost.backward_ms;
      case OpKind::kWeight:
        return cost.backward_weight_ms;
      case OpKind::kAllReduce:
        return costs_.allreduce_ms.empty() ? 0.0 : costs_.allreduce_ms[stage];
    }
    return 0.0;
  }

  // Follows "rank waits for an op of another rank" from `rank` until a rank repeats: that loop
  // is the deadlock. Every blocked rank waits for an op not done, so its rank is blocked too.
  Error deadlock(int rank) const {
    std::vector<int> visit_order;
    std::vector<int> seen_at(schedule_.placement.ranks, -1);
    while (seen_at[rank] < 0) {
      seen_at[rank] = static_cast<int>(visit_order.size());
      visit_order.push_back(rank);
      rank = blocked_on_[rank].rank;
    }
    std::string cycle;
    for (std::size_t i = static_cast<std::size_t>(seen_at[rank]); i < visit_order.size(); ++i) {
      const int waiting = visit_order[i];
      const Dependency& input = blocked_on_[waiting];
      const PipelineOp& at = schedule_.ranks[waiting][position_[waiting]];
      cycle += (cycle.empty() ? "" : "; ") + std::string("rank ") + std::to_string(waiting) +
               " waits at " + describeOp(at, schedule_.placement) + " for " +
               describeOp(input.op, schedule_.placement);
      cycle += input.rank == waiting ? " later in its own list"
                                     : " of rank " + std::to_string(input.rank);
    }
    return Error("schedule '" + schedule_.name + "' deadlocks: " + cycle +
                 "; reorder the op lists so that every op's inputs come first");
  }

  void summarize(SimulationResult* result) const {
    double step_ms = 0.0;
    for (int rank = 0; rank < schedule_.placement.ranks; ++rank) {
      step_ms = std::max(step_ms, free_at_ms_[rank]);
    }
    result->step_ms = step_ms;
    double idle_ms = 0.0;
    const OpKind frees = activationReleaseOp(schedule_);
    for (int rank = 0; rank < schedule_.placement.ranks; ++rank) {
      RankStats& stats = result->ranks[rank];
      int in_flight = 0;
      std::uint64_t live_bytes = 0;
      for (std::size_t i = 0; i < schedule_.ranks[rank].size(); ++i) {
        const PipelineOp& op = schedule_.ranks[rank][i];
        const OpTiming& timing = result->op_times[rank][i];
        if (op.kind == OpKind::kAllReduce) {
          stats.allreduce_ms += timing.end_ms - timing.start_ms;
          continue;
        }
        stats.busy_ms += timing.end_ms - timing.start_ms;
        const std::uint64_t bytes =
            costs_.stages[schedule_.placement.chunkAt(rank, op.chunk)].activation_bytes;
        if (op.kind == OpKind::kForward) {
          ++in_flight;
          live_bytes += bytes;
          stats.peak_in_flight = std::max(stats.peak_in_flight, in_flight);
          stats.peak_activation_bytes = std::max(stats.peak_activation_bytes, live_bytes);
        } else if (op.kind == frees) {
          --in_flight;
          live_bytes -= bytes;
        }
      }
      stats.idle_ms = std::max(0.0, step_ms - stats.busy_ms);
      idle_ms += stats.idle_ms;
    }
    result->bubble = step_ms > 0 ? idle_ms / (schedule_.placement.ranks * step_ms) : 0.0;
  }

  const Schedule& schedule_;
  const Placement placement_;
  const PipelineCosts& costs_;
  OpSlots slots_;
  std::vector<double> end_ms_;
  std::vector<int> waiting_rank_;
  std::vector<std::size_t> position_;
  std::vector<double> free_at_ms_;
  std::vector<Dependency> blocked_on_;
};

}  // namespace

SimulationResult simulate(const Schedule& schedule, const PipelineCosts& costs) {
  checkScheduleComplete(schedule);
  checkCostsFit(schedule, costs);
  return Simulation(schedule, costs).run();
}

}  // namespace stagecut
