#include "schedule/in_flight.h"

#include <algorithm>

#include "schedule/generators.h"

namespace stagecut {

std::vector<double> inFlightActivationShare(ScheduleKind kind, const Placement& placement, int microbatches) {
  checkPipelineShape(placement, microbatches);
  const int stages = placement.ranks;
  const int v = placement.chunks_per_rank;
  std::vector<double> share;
  if (kind == ScheduleKind::kGpipe || kind == ScheduleKind::kOneFOneB) {
    for (int rank = 0; rank < stages; ++rank) {
      share.push_back(kind == ScheduleKind::kGpipe ? microbatches : std::min(stages - rank, microbatches));
    }
    return share;
  }
  for (int peak : peakInFlight(generateSchedule(kind, placement, microbatches))) {
    share.push_back(static_cast<double>(peak) / v);
  }
  return share;
}

}  // namespace stagecut
