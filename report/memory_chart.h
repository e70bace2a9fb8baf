#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/partition.h"

namespace stagecut {

/// Per-stage memory (weights, gradients, optimizer state and in-flight activations, as the
/// partitioner predicts it) of every split as grouped bars, inline SVG. With `cap_bytes` (one
/// for all stages or one per stage) the cap is drawn as a red line and bars above it are marked.
std::string renderMemoryChart(const std::vector<Partition>& splits,
                              const std::vector<std::uint64_t>& cap_bytes);

/// The cap of stage `stage`: caps[0] for a single cap, caps[stage] for one per stage, 0 for none.
std::uint64_t stageCapBytes(const std::vector<std::uint64_t>& caps, std::size_t stage);

}  // namespace stagecut
