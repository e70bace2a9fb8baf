#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/partition.h"
#include "core/placement.h"
#include "core/profile.h"
#include "schedule/stage_costs.h"

namespace stagecut {

/// Time to move one boundary's tensor between ranks: latency + bytes / bandwidth.
struct BoundaryLink {
  double bandwidth_bytes_per_s = 0.0;  ///< 0: bandwidth is not a limit (only latency counts)
  double latency_ms = 0.0;

  /// The transfer time of `bytes`, in ms.
  double transferMs(std::uint64_t bytes) const;
  /// True when neither bandwidth nor latency is set: boundaries cost nothing.
  bool isFree() const { return bandwidth_bytes_per_s <= 0 && latency_ms <= 0; }
};

/// Costs built from a measured profile and a partition of its layers, and how they were built.
struct PartitionCosts {
  PipelineCosts costs;
  /// Layers without measured backward_input_ms and backward_weight_ms, whose backward was split
  /// evenly into B and W (it matters only to schedules that split W off).
  int layers_with_even_split = 0;
  /// Layers of an older profile whose B and W, each timed alone, add up to more than 5% over their whole backward
  /// (each re-runs most of a multi-op layer's internal backward); their W is taken as the
  /// backward minus B. See costsFromPartition.
  int layers_with_w_from_backward = 0;
  /// Per partition stage, summed over its layers (ms per microbatch, bytes per microbatch).
  std::vector<StageOpCosts> stages;
};

/// Per-model-stage costs for a schedule whose chunks sit on ranks as `placement` says, on a
/// partition of a profile: each partition stage is one rank; F, B (whole), B (input) and W are the sums of its
/// layers' medians, and activation bytes the sum of its layers'. B and W are the layers' own
/// when the profile timed them as a zero-bubble stage runs them (RunInfo::weightTimedAfterInput):
/// their sum is then more than the whole backward by what the split costs. In older profiles,
/// whose W is the gradient of the weights alone (re-running most of a multi-op layer's
/// backward), a layer's W is its backward minus its B (B capped at the backward). A chunked
/// partition (Partition::placement) gives each model stage its own chunk, and must be the
/// schedule's `placement`; on an N-stage partition with v > 1 chunks each rank's stage is divided
/// evenly into its v chunks, model stage placement.chunkAt(r, c) taking rank r's share (the
/// partition fixes a rank's work, not the chunk layout). Boundary s -> s + 1 carries the output_bytes of rank s's last layer over `link`
/// (for a chunked schedule's other boundaries, the largest partition boundary). Throws Error
/// (input) when the partition does not cover the profile's layers or does not fit `placement`.
PartitionCosts costsFromPartition(const Profile& profile, const Partition& partition, const Placement& placement,
                                  const BoundaryLink& link, const std::string& partition_source);

}  // namespace stagecut
