#include "prediction/memory_prediction.h"

#include <map>

namespace stagecut {

double peakMemoryBytes(const std::vector<MemoryState>& states, const StageMemoryTerms& terms, int* at) {
  double peak = 0.0;
  for (std::size_t i = 0; i < states.size(); ++i) {
    const double bytes = memoryStateBytes(states[i], terms);
    if (i == 0 || bytes > peak) {
      peak = bytes;
      if (at) *at = static_cast<int>(i);
    }
  }
  return peak;
}

MemoryPrediction predictMemory(const Profile& profile, const Partition& partition, const Schedule& schedule,
                               const std::vector<RecomputeOption>& recompute, const OptimizerMemory& optimizer) {
  MemoryPrediction prediction;
  prediction.missing_fields = missingMemoryFields(profile);
  const std::vector<LayerMemoryTerms> layers = layerMemoryTerms(profile);
  const int ranks = static_cast<int>(partition.stages.size());
  std::map<std::string, StageMemoryTable> tables;  // one per recompute mode of the split
  for (int r = 0; r < ranks; ++r) {
    const StageCost& stage = partition.stages[static_cast<std::size_t>(r)];
    StageMemoryRules rules;
    rules.splits_backward = schedule.splits_backward;
    if (!recompute.empty()) rules.recompute = &recompute[static_cast<std::size_t>(r)];
    rules.optimizer = optimizer;
    const bool recomputes = recomputesSome(rules.recompute, stage.first, stage.last);
    const std::string mode = rules.recompute ? rules.recompute->name : "none";
    auto table = tables.find(mode);
    if (table == tables.end()) table = tables.emplace(mode, StageMemoryTable(layers, rules)).first;
    RankMemory rank;
    rank.terms = table->second.terms(stage.first, stage.last);
    const RankOps& ops = schedule.ranks[static_cast<std::size_t>(r)];
    const std::vector<MemoryState> states =
        rankMemoryStates(ops, schedule.chunks, schedule.splits_backward, recomputes, r == 0, r + 1 == ranks);
    for (std::size_t i = 0; i < ops.size(); ++i) rank.op_peak_bytes.push_back(memoryStateBytes(states[i], rank.terms));
    rank.optimizer_step_bytes = memoryStateBytes(states.back(), rank.terms);
    rank.peak_bytes = peakMemoryBytes(states, rank.terms, &rank.peak_op);
    rank.peak_parts = memoryStateParts(states[static_cast<std::size_t>(rank.peak_op)], rank.terms);
    prediction.ranks.push_back(std::move(rank));
  }
  return prediction;
}

}  // namespace stagecut
