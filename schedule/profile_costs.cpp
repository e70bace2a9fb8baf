#include "schedule/profile_costs.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "core/partition_json.h"
#include "schedule/schedule_kind.h"

namespace stagecut {

namespace {

constexpr std::uint64_t kMaxStageBytes = std::uint64_t{1} << 63;

}  // namespace

double BoundaryLink::transferMs(std::uint64_t bytes) const {
  const double wire_ms =
      bandwidth_bytes_per_s > 0 ? 1000.0 * static_cast<double>(bytes) / bandwidth_bytes_per_s : 0.0;
  return latency_ms + wire_ms;
}

namespace {

// One stage's summed costs over its layers: B and W as the profile timed them (see
// costsFromPartition), counting the layers whose split had to be inferred.
StageOpCosts rangeCosts(const Profile& profile, const StageCost& range, std::size_t index, const std::string& source,
                        PartitionCosts* result) {
  StageOpCosts stage{0.0, 0.0, 0.0, 0.0, 0};
  for (int i = range.first; i <= range.last; ++i) {
    const LayerCost& layer = profile.layers[static_cast<std::size_t>(i)];
    stage.forward_ms += layer.forward_ms.median;
    stage.backward_ms += layer.backward_ms.median;
    if (layer.backward_input_ms && layer.backward_weight_ms && profile.run.weightTimedAfterInput()) {
      stage.backward_input_ms += layer.backward_input_ms->median;
      stage.backward_weight_ms += layer.backward_weight_ms->median;
    } else if (layer.backward_input_ms && layer.backward_weight_ms) {
      const double backward = layer.backward_ms.median;
      const double input_part = std::min(layer.backward_input_ms->median, backward);
      stage.backward_input_ms += input_part;
      stage.backward_weight_ms += backward - input_part;
      if (layer.backward_input_ms->median + layer.backward_weight_ms->median > 1.05 * backward) {
        ++result->layers_with_w_from_backward;
      }
    } else {
      stage.backward_input_ms += layer.backward_ms.median / 2;
      stage.backward_weight_ms += layer.backward_ms.median / 2;
      ++result->layers_with_even_split;
    }
    stage.activation_bytes += layer.activation_bytes;
    // Each term is below 2^63 (the profile reader's limit), so a sum past it has not wrapped yet.
    if (stage.activation_bytes >= kMaxStageBytes) {
      throw Error(source + ": stage " + std::to_string(index) + " (layers " + std::to_string(range.first) + "-" +
                  std::to_string(range.last) + "): the profile's activation_bytes add up to more than 8 EiB; check the profile");
    }
  }
  if (!std::isfinite(stage.forward_ms + stage.backward_ms + stage.backward_input_ms + stage.backward_weight_ms)) {
    throw Error(source + ": stage " + std::to_string(index) + " (layers " + std::to_string(range.first) + "-" +
                std::to_string(range.last) + "): the profile's forward_ms and backward_ms add up to more than stagecut can "
                "compute with; check the profile");
  }
  return stage;
}

// An N-stage split run with v chunks per rank: each rank's stage divided evenly into its chunks.
void divideStagesEvenly(const Placement& placement, std::vector<std::uint64_t> boundary_bytes, const BoundaryLink& link,
                        PartitionCosts* result) {
  const std::size_t ranks = result->stages.size();
  // The last rank's output is the loss: its boundary matters only where chunks go on past it,
  // and the partition does not say what that tensor is; the largest boundary is the
  // conservative guess.
  boundary_bytes.back() = ranks > 1 ? *std::max_element(boundary_bytes.begin(), boundary_bytes.end() - 1) : 0;
  const int chunks = placement.chunks_per_rank;
  const double share = 1.0 / chunks;
  result->costs.stages.resize(static_cast<std::size_t>(placement.chunkCount()));
  for (int chunk = 0; chunk < chunks; ++chunk) {
    for (std::size_t rank = 0; rank < ranks; ++rank) {
      StageOpCosts stage = result->stages[rank];
      stage.forward_ms *= share;
      stage.backward_ms *= share;
      stage.backward_input_ms *= share;
      stage.backward_weight_ms *= share;
      stage.activation_bytes /= static_cast<std::uint64_t>(chunks);
      result->costs.stages[static_cast<std::size_t>(placement.chunkAt(static_cast<int>(rank), chunk))] = stage;
    }
  }
  for (int stage = 0; stage + 1 < placement.chunkCount() && !link.isFree(); ++stage) {
    result->costs.comm_ms.push_back(link.transferMs(boundary_bytes[static_cast<std::size_t>(placement.rankOf(stage))]));
  }
}

}  // namespace

PartitionCosts costsFromPartition(const Profile& profile, const Partition& partition, const Placement& placement,
                                  const BoundaryLink& link, const std::string& partition_source) {
  checkPartitionCoversLayers(partition, profile.layerCount(), partition_source);
  PartitionCosts result;
  std::vector<std::uint64_t> boundary_bytes;
  for (const StageCost& range : partition.stages) {
    result.stages.push_back(rangeCosts(profile, range, result.stages.size(), partition_source, &result));
    boundary_bytes.push_back(profile.layers[static_cast<std::size_t>(range.last)].output_bytes);
  }
  const Placement own = partition.rankPlacement();
  if (own.chunked() && own != placement) {
    throw Error(partition_source + ": the split places " + placementWords(own) + "; it runs only as placed, not on " +
                placementWords(placement));
  }
  if (own.chunked()) {
    // Each stage is a chunk, at its place in the chain.
    result.costs.stages = result.stages;
    for (std::size_t s = 0; s + 1 < result.stages.size() && !link.isFree(); ++s) {
      result.costs.comm_ms.push_back(link.transferMs(boundary_bytes[s]));
    }
    return result;
  }
  if (placement.ranks != static_cast<int>(result.stages.size())) {
    throw Error(partition_source + ": the split has " + std::to_string(result.stages.size()) + " stages, the schedule " +
                std::to_string(placement.ranks) + " ranks; use --stages " + std::to_string(result.stages.size()));
  }
  divideStagesEvenly(placement, std::move(boundary_bytes), link, &result);
  return result;
}

}  // namespace stagecut
