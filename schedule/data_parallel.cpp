#include "schedule/data_parallel.h"

#include <string>

#include "core/error.h"
#include "core/partition_json.h"

namespace stagecut {

Schedule withGradientAllReduce(const Schedule& schedule) {
  if (schedule.hasAllReduce()) {
    throw Error("schedule '" + schedule.name +
                "' already holds all-reduce ops; add the gradient all-reduce once");
  }
  Schedule result = schedule;
  for (RankOps& ops : result.ranks) {
    for (int chunk = schedule.placement.chunks_per_rank - 1; chunk >= 0; --chunk) {
      ops.push_back({OpKind::kAllReduce, 0, chunk});
    }
  }
  return result;
}

RingAllReduceCost ringAllReduceCost(int replicas, const BoundaryLink& link) {
  if (replicas < 1) {
    throw Error("--data-parallel " + std::to_string(replicas) +
                ": each stage needs at least 1 replica; use --data-parallel 1 for a plain pipeline");
  }
  RingAllReduceCost cost;
  if (replicas == 1) return cost;
  const double steps = 2.0 * (replicas - 1);
  cost.fixed_ms = steps * link.latency_ms;
  cost.ms_per_byte = link.bandwidth_bytes_per_s > 0 ? steps / replicas / link.bandwidth_bytes_per_s * 1e3 : 0.0;
  return cost;
}

double ringAllReduceMs(std::uint64_t bytes, int replicas, const BoundaryLink& link) {
  return ringAllReduceCost(replicas, link).ms(static_cast<double>(bytes));
}

std::vector<double> allReduceMsFromPartition(const Profile& profile, const Partition& partition,
                                             const Placement& placement, int replicas, const BoundaryLink& link) {
  checkPartitionCoversLayers(partition, profile.layerCount(), "partition");
  std::vector<std::uint64_t> stage_bytes;
  for (const StageCost& range : partition.stages) {
    std::uint64_t bytes = 0;
    for (int i = range.first; i <= range.last; ++i) {
      bytes += profile.layers[static_cast<std::size_t>(i)].param_bytes;
    }
    stage_bytes.push_back(bytes);
  }
  std::vector<double> result;
  if (partition.rankPlacement().chunked()) {  // each stage is a chunk, a model stage of its own
    for (std::uint64_t bytes : stage_bytes) result.push_back(ringAllReduceMs(bytes, replicas, link));
    return result;
  }
  for (int stage = 0; stage < placement.chunkCount(); ++stage) {
    const std::uint64_t bytes = stage_bytes.at(static_cast<std::size_t>(placement.rankOf(stage)));
    result.push_back(ringAllReduceMs(bytes / static_cast<std::uint64_t>(placement.chunks_per_rank), replicas, link));
  }
  return result;
}

}  // namespace stagecut
