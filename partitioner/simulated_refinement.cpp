#include "partitioner/simulated_refinement.h"

#include <algorithm>
#include <functional>

#include "partitioner/bottleneck_probe.h"
#include "partitioner/split_score.h"
#include "prediction/pipeline_prediction.h"

namespace stagecut {

double simulatedSplitStepMs(const Profile& profile, PredictionOptions prediction, const CostModel& model,
                            const std::vector<int>& counts, const std::optional<Placement>& placement) {
  Partition candidate;
  candidate.placement = placement;
  int first = 0;
  for (int s = 0; s < model.stageCount(); ++s) {
    StageCost stage;
    stage.first = first;
    stage.last = first + counts[s] - 1;
    if (model.recomputes()) stage.recompute = model.recomputeName(std::max(0, model.recomputeChoice(s, stage.first, stage.last)));
    candidate.stages.push_back(stage);
    first = stage.last + 1;
  }
  prediction.memory = false;
  return predictPipeline(profile, candidate, prediction, "the refined split").simulated.step_ms;
}

SimulatedRefinement refineBySimulatedStep(const Profile& profile, const PartitionOptions& options,
                                          const CostModel& model, const std::vector<int>& exact_split) {
  const PredictionOptions prediction = predictionOptions(options);
  SimulatedRefinement result;
  result.layers_per_stage = exact_split;
  result.exact_split_simulated_ms = simulatedSplitStepMs(profile, prediction, model, exact_split, std::nullopt);
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
      if (!model.canEndAt(last)) continue;
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
      const double step_ms = simulatedSplitStepMs(profile, prediction, model, counts, std::nullopt);
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
