#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "core/partition.h"
#include "core/profile.h"

namespace stagecut {

/// Prints a partition's per-stage table (layers, times, params, memory) and its summary line
/// (bottleneck against the lower bound, predicted step and bubble), indented by two spaces.
/// `layer_ranges[s]` is stage s's "layers" cell: layerIndexRanges() or layerNameRanges().
void printPartitionTable(std::ostream& out, const Partition& partition,
                     const std::vector<std::string>& layer_ranges);

/// "0-3" per stage: its first and last layer index, for a partition read without its profile.
/// Each stage's predicted peak by part (StageCost::memory_parts), when the split has them.
void printMemoryParts(std::ostream& out, const Partition& partition);

std::vector<std::string> layerIndexRanges(const Partition& partition);

/// "embed .. block1" per stage, or "head" for a stage of one layer: its layers' names in `profile`.
std::vector<std::string> layerNameRanges(const Partition& partition, const Profile& profile);

}  // namespace stagecut
