#include "validation/validation_report.h"

namespace stagecut {

std::vector<std::optional<std::pair<int, int>>> modelStageLayers(const ValidationReport& report) {
  const Placement& placement = report.ops.placement;
  std::vector<std::optional<std::pair<int, int>>> stages(static_cast<std::size_t>(placement.chunkCount()));
  for (const auto& rank : report.ranks) {
    if (rank.replica != 0 || rank.stage < 0 || rank.stage >= placement.ranks) continue;
    const std::vector<std::pair<int, int>> chunks =
        rank.chunk_layers.empty() ? std::vector<std::pair<int, int>>{{rank.first_layer, rank.last_layer}}
                                  : rank.chunk_layers;
    for (std::size_t local = 0; local < chunks.size() && static_cast<int>(local) < placement.chunks_per_rank; ++local) {
      stages[static_cast<std::size_t>(placement.chunkAt(rank.stage, static_cast<int>(local)))] = chunks[local];
    }
  }
  return stages;
}

}  // namespace stagecut
