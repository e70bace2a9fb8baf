#pragma once

#include <vector>

#include "schedule/schedule_kind.h"

namespace stagecut {

/// Per rank of schedule `kind` on `placement` (N ranks, v chunks each) and M = `microbatches`: how many microbatches' worth of the rank's activations
/// are alive at once, the factor the partitioner's memory term multiplies a stage's kept bytes
/// by. It is peakInFlight() of the schedule's op lists divided by v (each chunk holds 1 / v of
/// the rank's layers); GPipe (M) and 1F1B (min(N - r, M)) use their closed forms, which the
/// tests hold equal to the op lists, so that no list is built for them. Throws Error (input) as
/// generateSchedule() does for a shape the schedule cannot run.
std::vector<double> inFlightActivationShare(ScheduleKind kind, const Placement& placement, int microbatches);

}  // namespace stagecut
