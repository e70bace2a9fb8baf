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

namespace {

// An N-stage split run by a schedule of v chunks per rank: each chunk holds 1 / v of the rank's
// weights, state and per-microbatch bytes, and its ops the rank's buffers and temporaries.
StageMemoryTerms evenChunkShare(StageMemoryTerms terms, int chunks) {
  const double share = 1.0 / chunks;
  terms.weights *= share;
  terms.gradients *= share;
  terms.optimizer *= share;
  terms.kept *= share;
  terms.pending *= share;
  return terms;
}

}  // namespace

MemoryPrediction predictMemory(const Profile& profile, const Partition& partition, const Schedule& schedule,
                               const std::vector<RecomputeOption>& recompute, const OptimizerMemory& optimizer) {
  MemoryPrediction prediction;
  prediction.missing_fields = missingMemoryFields(profile);
  const std::vector<LayerMemoryTerms> layers = layerMemoryTerms(profile);
  const Placement placement = partition.rankPlacement();
  const int chunks = schedule.placement.chunks_per_rank;
  // Whose terms each (rank, local chunk) takes: the partition's own chunk, or the rank's stage
  // shared evenly by the schedule's chunks.
  const bool own_chunks = placement.chunked();
  const Placement runs = schedule.placement;
  std::map<std::string, StageMemoryTable> tables;  // one per recompute mode of the split
  const auto stageTerms = [&](int stage, bool* recomputes) {
    const StageCost& range = partition.stages[static_cast<std::size_t>(stage)];
    StageMemoryRules rules;
    rules.splits_backward = schedule.splits_backward;
    if (!recompute.empty()) rules.recompute = &recompute[static_cast<std::size_t>(stage)];
    rules.optimizer = optimizer;
    *recomputes = *recomputes || recomputesSome(rules.recompute, range.first, range.last);
    const std::string mode = rules.recompute ? rules.recompute->name : "none";
    auto table = tables.find(mode);
    if (table == tables.end()) table = tables.emplace(mode, StageMemoryTable(layers, rules)).first;
    return table->second.terms(range.first, range.last);
  };
  for (int r = 0; r < placement.ranks; ++r) {
    RankMemory rank;
    bool recomputes = false;
    if (own_chunks) {
      for (int local = 0; local < chunks; ++local) rank.terms.push_back(stageTerms(placement.chunkAt(r, local), &recomputes));
    } else {
      rank.terms.assign(static_cast<std::size_t>(chunks), evenChunkShare(stageTerms(r, &recomputes), chunks));
    }
    const RankOps& ops = schedule.ranks[static_cast<std::size_t>(r)];
    const std::vector<std::vector<MemoryState>> states =
        rankChunkMemoryStates(ops, runs, r, schedule.splits_backward, recomputes);
    for (std::size_t i = 0; i < states.size(); ++i) {
      const MemoryParts parts = rankStateParts(states[i], rank.terms);
      const double bytes = parts.total();
      if (i < ops.size()) rank.op_peak_bytes.push_back(bytes);
      if (i == 0 || bytes > rank.peak_bytes) {
        rank.peak_bytes = bytes;
        rank.peak_op = static_cast<int>(i);
        rank.peak_parts = parts;
      }
    }
    rank.optimizer_step_bytes = rankStateParts(states.back(), rank.terms).total();
    prediction.ranks.push_back(std::move(rank));
  }
  return prediction;
}

}  // namespace stagecut
