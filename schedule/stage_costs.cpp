#include "schedule/stage_costs.h"

#include <cmath>
#include <cstdio>
#include <string>

#include "core/error.h"

namespace stagecut {

namespace {

constexpr std::size_t kNoIndex = static_cast<std::size_t>(-1);

// `what` names the time only when it is refused: these checks run before every simulation, and
// a plan simulates thousands of splits.
void checkTime(double ms, const char* where, std::size_t index, const char* field) {
  if (!std::isfinite(ms) || ms < 0) {
    char value[32];
    std::snprintf(value, sizeof value, "%g", ms);
    const std::string what = index == kNoIndex ? std::string(where) : where + std::to_string(index);
    throw Error(what + field + " is " + value + "; times must be finite and >= 0");
  }
}

}  // namespace

PipelineCosts unitCosts(const Schedule& schedule) {
  const double per_chunk = 1.0 / schedule.placement.chunks_per_rank;
  StageOpCosts stage;
  stage.forward_ms = per_chunk;
  stage.backward_ms = 2 * per_chunk;
  stage.backward_input_ms = per_chunk;
  stage.backward_weight_ms = per_chunk;
  PipelineCosts costs;
  costs.stages.assign(static_cast<std::size_t>(schedule.placement.chunkCount()), stage);
  return costs;
}

PipelineCosts costsFromStageTimes(const std::vector<double>& forward_ms,
                                  const std::vector<double>& backward_ms, double comm_ms) {
  if (forward_ms.empty() || forward_ms.size() != backward_ms.size()) {
    throw Error("stage times: " + std::to_string(forward_ms.size()) + " forward and " +
                std::to_string(backward_ms.size()) +
                " backward times; give one of each per stage, at least one stage");
  }
  checkTime(comm_ms, "stage times: the communication time", kNoIndex, "");
  PipelineCosts costs;
  for (std::size_t s = 0; s < forward_ms.size(); ++s) {
    checkTime(forward_ms[s], "stage ", s, ": forward_ms");
    checkTime(backward_ms[s], "stage ", s, ": backward_ms");
    StageOpCosts stage;
    stage.forward_ms = forward_ms[s];
    stage.backward_ms = backward_ms[s];
    stage.backward_input_ms = backward_ms[s] / 2;
    stage.backward_weight_ms = backward_ms[s] / 2;
    costs.stages.push_back(stage);
  }
  if (comm_ms > 0) costs.comm_ms.assign(forward_ms.size() - 1, comm_ms);
  return costs;
}

void checkCostsFit(const Schedule& schedule, const PipelineCosts& costs) {
  const auto model_stages = static_cast<std::size_t>(schedule.placement.chunkCount());
  if (costs.stages.size() != model_stages) {
    throw Error("schedule '" + schedule.name + "': costs for " +
                std::to_string(costs.stages.size()) + " model stages, but " +
                std::to_string(schedule.placement.ranks) + " ranks x " + std::to_string(schedule.placement.chunks_per_rank) +
                " chunks need " + std::to_string(model_stages) + "; give one per model stage");
  }
  if (!costs.comm_ms.empty() && costs.comm_ms.size() != model_stages - 1) {
    throw Error("schedule '" + schedule.name + "': " + std::to_string(costs.comm_ms.size()) +
                " communication times for " + std::to_string(model_stages - 1) +
                " boundaries; give one per boundary, or none");
  }
  if (!costs.allreduce_ms.empty() && costs.allreduce_ms.size() != model_stages) {
    throw Error("schedule '" + schedule.name + "': " + std::to_string(costs.allreduce_ms.size()) +
                " all-reduce times for " + std::to_string(model_stages) +
                " model stages; give one per model stage, or none");
  }
  for (std::size_t s = 0; s < costs.allreduce_ms.size(); ++s) {
    checkTime(costs.allreduce_ms[s], "model stage ", s, ": allreduce_ms");
  }
  for (std::size_t s = 0; s < model_stages; ++s) {
    const StageOpCosts& stage = costs.stages[s];
    checkTime(stage.forward_ms, "model stage ", s, ": forward_ms");
    checkTime(stage.backward_ms, "model stage ", s, ": backward_ms");
    checkTime(stage.backward_input_ms, "model stage ", s, ": backward_input_ms");
    checkTime(stage.backward_weight_ms, "model stage ", s, ": backward_weight_ms");
  }
  for (std::size_t b = 0; b < costs.comm_ms.size(); ++b) {
    checkTime(costs.comm_ms[b], "boundary ", b, ": comm_ms");
  }
}

void applyRankAdjustments(const RankAdjustments& adjustments, const Placement& placement, PipelineCosts* costs) {
  const int ranks = placement.ranks;
  const std::size_t model_stages = static_cast<std::size_t>(placement.chunkCount());
  const auto check = [&](std::size_t size, const char* what, bool per_chunk) {
    if (size != 0 && size != static_cast<std::size_t>(ranks) && !(per_chunk && size == model_stages)) {
      throw Error(std::string(what) + ": " + std::to_string(size) + " values for " + std::to_string(ranks) +
                  " ranks; give one per rank");
    }
  };
  check(adjustments.extra_backward_ms.size(), "recomputation per rank", true);
  check(adjustments.kept_activation_bytes.size(), "kept activation bytes per rank", true);
  check(adjustments.speed.size(), "--stage-speed", false);
  if (costs->stages.size() != model_stages) {
    throw Error("costs: " + std::to_string(costs->stages.size()) + " model stages for " + std::to_string(model_stages) +
                " chunks placed");
  }
  // A value per rank is shared by its chunks; one per model stage is that chunk's own.
  const auto share = [&](const auto& values, std::size_t m) {
    return values.size() == model_stages && placement.chunked()
               ? static_cast<double>(values[m])
               : static_cast<double>(values[static_cast<std::size_t>(placement.rankOf(static_cast<int>(m)))]) /
                     placement.chunks_per_rank;
  };
  for (std::size_t m = 0; m < costs->stages.size(); ++m) {
    StageOpCosts& stage = costs->stages[m];
    if (!adjustments.extra_backward_ms.empty()) {
      // The recomputed forward runs before B, whichever way W is split off.
      stage.backward_ms += share(adjustments.extra_backward_ms, m);
      stage.backward_input_ms += share(adjustments.extra_backward_ms, m);
    }
    if (!adjustments.kept_activation_bytes.empty()) {
      stage.activation_bytes = static_cast<std::uint64_t>(share(adjustments.kept_activation_bytes, m));
    }
    if (!adjustments.speed.empty()) {
      const double speed = adjustments.speed[static_cast<std::size_t>(placement.rankOf(static_cast<int>(m)))];
      stage.forward_ms /= speed;
      stage.backward_ms /= speed;
      stage.backward_input_ms /= speed;
      stage.backward_weight_ms /= speed;
    }
  }
}

}  // namespace stagecut
