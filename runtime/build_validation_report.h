#pragma once

#include <cstdint>
#include <vector>

#include "core/partition.h"
#include "core/profile.h"
#include "runtime/validation_types.h"
#include "validation/validation_report.h"

namespace stagecut {

/// Builds the report from every rank's outcome: prediction from the profile's medians plus the
/// measured links, on the same op lists.
ValidationReport buildValidationReport(const ValidateRequest& request, const Profile& profile,
                                       const Partition& partition, const std::vector<RankOutcome>& outcomes);

}  // namespace stagecut
