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

/// One split's per-stage peak by part (StageCost::memory_parts: weights, gradients, optimizer,
/// activations, buffers, temporaries) as stacked bars, inline SVG; "" when a stage lacks them.
std::string renderMemoryPartsChart(const Partition& split, const std::vector<std::uint64_t>& cap_bytes);

/// Memory over one validation step, per rank: the bytes at the peak of each op of its list and
/// of the optimizer step, measured (solid) and predicted (dashed), and the cap. `measured[r]` and
/// `predicted[r]` are rank r's points; "" when there are none.
std::string renderMemoryTimelineChart(const std::vector<std::vector<double>>& measured,
                                      const std::vector<std::vector<double>>& predicted,
                                      const std::vector<std::uint64_t>& cap_bytes);

/// The cap of stage `stage`: caps[0] for a single cap, caps[stage] for one per stage, 0 for none.
std::uint64_t stageCapBytes(const std::vector<std::uint64_t>& caps, std::size_t stage);

}  // namespace stagecut
