#pragma once

#include <string>
#include <vector>

#include "core/partition.h"
#include "core/profile.h"

namespace stagecut {

/// Colours the report gives each split method, so a method reads the same in every chart.
std::string splitColour(const std::string& method);

/// A layer's forward and whole backward medians together: the compute the report's layer
/// chart draws and its text weighs against the layer's share of the parameters.
double layerComputeMs(const LayerCost& layer);

/// The per-layer chart, inline SVG: three panels over one layer axis (compute as stacked
/// forward, B and W bars; parameters; activation memory per microbatch), each bar labelled with
/// its share of the panel's total, so layers heavy in parameters but light in compute (a GPT's
/// embedding) stand out.
std::string renderLayerChart(const Profile& profile);

/// One split drawn over the layers, inline SVG: the stage bands and boundaries, each stage's
/// cost as a step (the bottleneck in red) on a scale shared by all `splits`, and the layers'
/// compute above and parameters below the axis. `split` must cover the profile's layers.
std::string renderSplitChart(const Profile& profile, const Partition& split,
                             const std::vector<Partition>& splits);

}  // namespace stagecut
