#pragma once

#include <cstdint>
#include <vector>

#include "core/partition.h"
#include "core/profile.h"
#include "schedule/pipeline_schedule.h"
#include "schedule/profile_costs.h"

namespace stagecut {

/// The schedule for pipeline x data parallel: `schedule` with one gradient all-reduce op
/// A(c) (kAllReduce, microbatch 0) appended to each rank's list per local chunk, after that
/// rank's last op, the highest chunk first (its backward finishes first in every generator).
/// Every replica of the pipeline runs the same lists; A(c) all-reduces the gradients of chunk c
/// with the other replicas of the same rank. Throws Error (input) when `schedule` already holds
/// all-reduce ops.
Schedule withGradientAllReduce(const Schedule& schedule);

/// A ring all-reduce's time as a line in its bytes: fixed_ms + ms_per_byte x bytes. The one
/// formula of the gradient all-reduce; the partitioner sums it over layer ranges.
struct RingAllReduceCost {
  double fixed_ms = 0.0;     ///< 2 (D - 1) x latency
  double ms_per_byte = 0.0;  ///< 2 (D - 1) / D / bandwidth, in ms
  /// The all-reduce of `bytes`, ms.
  double ms(double bytes) const { return fixed_ms + ms_per_byte * bytes; }
};

/// The ring all-reduce cost over `replicas` ranks on `link` (zero when replicas == 1). Throws
/// Error (input) naming --data-parallel when replicas < 1.
RingAllReduceCost ringAllReduceCost(int replicas, const BoundaryLink& link);

/// Time of a ring all-reduce of `bytes` over `replicas` ranks on `link`, in ms:
/// 2 (D - 1) / D x bytes / bandwidth + 2 (D - 1) x latency (D - 1 reduce-scatter and D - 1
/// all-gather steps). 0 when replicas == 1; no bandwidth term when the link has none.
/// Throws Error (input) naming --data-parallel when replicas < 1.
double ringAllReduceMs(std::uint64_t bytes, int replicas, const BoundaryLink& link);

/// Per model stage (N * v, in the order of PipelineCosts::stages) the all-reduce time of its
/// gradients, the param_bytes of its layers (a chunked partition's own chunk, or a rank's
/// partition stage divided evenly among the v chunks `placement` gives it), over `replicas` on
/// `link`. Throws Error (input) when the partition does not cover the profile's layers or
/// replicas < 1.
std::vector<double> allReduceMsFromPartition(const Profile& profile, const Partition& partition,
                                             const Placement& placement, int replicas, const BoundaryLink& link);

}  // namespace stagecut
