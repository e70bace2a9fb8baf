#include "partitioner/simulated_refinement.h"

#include <algorithm>
#include <functional>

#include "partitioner/bottleneck_probe.h"
#include "partitioner/split_score.h"
#include "schedule/data_parallel.h"
#include "schedule/generators.h"
#include "schedule/simulator.h"
#include "schedule/stage_costs.h"

namespace stagecut {

namespace {

double simulatedStepMs(const Profile& profile, const PartitionOptions& options, const CostModel& model,
                       const Schedule& schedule, const std::vector<int>& counts) {
  PipelineCosts costs;
  int first = 0;
  for (int s = 0; s < model.stageCount(); ++s) {
    const int last = first + counts[s] - 1;
    double forward_ms = 0.0, backward_ms = 0.0;
    for (int k = first; k <= last; ++k) {
      forward_ms += profile.layers[k].forward_ms.median;
      backward_ms += profile.layers[k].backward_ms.median;
    }
    // Recomputation reruns the forward inside the backward pass.
    backward_ms += model.recomputeExtraMs(std::max(0, model.recomputeChoice(s, first, last)), first, last);
    if (options.data_parallel > 1) costs.allreduce_ms.push_back(model.allReduceMs(first, last));
    const double speed = model.costs().stage_speed[s];
    StageOpCosts stage;
    stage.forward_ms = forward_ms / speed;
    stage.backward_ms = backward_ms / speed;
    stage.backward_input_ms = stage.backward_ms / 2;
    stage.backward_weight_ms = stage.backward_ms / 2;
    costs.stages.push_back(stage);
    if (model.hasCommunication() && s + 1 < model.stageCount()) costs.comm_ms.push_back(model.commOutMs(last) / 2);
    first = last + 1;
  }
  return simulate(schedule, costs).step_ms;
}

}  // namespace

SimulatedRefinement refineBySimulatedStep(const Profile& profile, const PartitionOptions& options,
                                          const CostModel& model, const std::vector<int>& exact_split) {
  Schedule schedule = generateSchedule(pipelineScheduleName(options.schedule), model.stageCount(),
                                       options.microbatches);
  if (options.data_parallel > 1) schedule = withGradientAllReduce(schedule);
  SimulatedRefinement result;
  result.layers_per_stage = exact_split;
  result.exact_split_simulated_ms = simulatedStepMs(profile, options, model, schedule, exact_split);
  result.simulated_step_ms = result.exact_split_simulated_ms;
  result.candidates = 1;

  const double bottleneck_ms = scoreSplit(model, exact_split).bottleneck_ms;
  // Every stage within the optimal bottleneck (to the solvers' tolerance) keeps it optimal.
  const double limit_ms = bottleneck_ms * (1 + 1e-9);
  const std::vector<EndWindow> windows = feasibleEndWindows(model, limit_ms);
  if (windows.empty()) return result;
  const int layers = model.layerCount(), stages = model.stageCount();
  std::vector<int> counts(stages);
  std::function<void(int, int)> visit = [&](int stage, int first) {
    if (result.truncated) return;
    const EndWindow& window = windows[stage];
    for (int last = std::max(first, window.lo); last <= window.hi; ++last) {
      if (stage == stages - 1 && last != layers - 1) continue;
      if (model.stageCostMs(stage, first, last) > limit_ms || !model.fitsMemory(stage, first, last)) continue;
      counts[stage] = last - first + 1;
      if (stage + 1 < stages) {
        visit(stage + 1, last + 1);
        continue;
      }
      if (counts == exact_split) continue;
      if (result.candidates >= kMaxRefinementCandidates) {
        result.truncated = true;
        return;
      }
      ++result.candidates;
      const double step_ms = simulatedStepMs(profile, options, model, schedule, counts);
      if (clearlyLess(step_ms, result.simulated_step_ms)) {
        result.simulated_step_ms = step_ms;
        result.layers_per_stage = counts;
      }
    }
  };
  visit(0, 0);
  return result;
}

}  // namespace stagecut
