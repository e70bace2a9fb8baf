#pragma once

#include <cstdint>
#include <vector>

#include "core/partition.h"
#include "core/profile.h"
#include "runtime/validation_types.h"
#include "validation/validation_report.h"

namespace stagecut {

/// The most activation bytes that one rank keeps alive under checkpointing, walking its op list:
/// `input_bytes` for every microbatch between its F and its B, plus `activation_bytes` (the
/// stage's layers, one microbatch) from B's recomputation until the op that frees them (B, or W
/// where W is split off).
std::uint64_t recomputePeakActivationBytes(const RankOps& ops, std::uint64_t input_bytes,
                                           std::uint64_t activation_bytes, bool splits_backward);

/// Builds the report from every rank's outcome: prediction from the profile's medians plus the
/// measured links, on the same op lists.
ValidationReport buildValidationReport(const ValidateRequest& request, const Profile& profile,
                                       const Partition& partition, const std::vector<RankOutcome>& outcomes);

}  // namespace stagecut
