#pragma once

#include <ostream>
#include <string>

#include "core/partition.h"
#include "core/profile.h"

namespace stagecut {

/// Prints a partition's per-stage table (layers, times, params, memory) and its summary line
/// (bottleneck against the lower bound, predicted step and bubble), indented by two spaces.
void printPartitionTable(std::ostream& out, const Partition& partition, const Profile& profile);

/// "+16.7%" / "-3.0%" / "0.0%": a relative difference for comparison columns.
std::string formatSignedPercent(double fraction);

}  // namespace stagecut
