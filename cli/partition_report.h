#pragma once

#include <ostream>
#include <string>

#include "core/partition.h"
#include "core/profile.h"

#include <vector>

#include <nlohmann/json.hpp>

#include "partitioner/partition_options.h"
#include "partitioner/partition_summary.h"

namespace stagecut {

/// Per stage of `partition`: its recompute mode, memory without and with it, the memory saved
/// against the forward added (per microbatch and per step of `options.microbatches`), and with
/// data parallelism its all-reduce and the part of it left exposed. Indented by two spaces.
void printRecomputeTable(std::ostream& out, const std::vector<StageRecompute>& stages,
                         const PartitionOptions& options);

/// The per-stage figures of describeRecompute() for a split of `profile` under `options`.
std::vector<StageRecompute> stageRecompute(const Profile& profile, const PartitionOptions& options,
                                           const Partition& partition, const std::string& source);

}  // namespace stagecut
