#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace stagecut {

/// Format tag of partition files this build reads and writes.
inline constexpr const char* kPartitionFormat = "stagecut.partition/1";

/// One pipeline stage: the inclusive layer range [first, last] and what it costs per microbatch.
struct StageCost {
  int first = 0;
  int last = 0;
  double forward_ms = 0.0;
  double backward_ms = 0.0;
  double comm_ms = 0.0;  ///< receiving its input and sending its output, both directions
  double cost_ms = 0.0;  ///< (forward + backward + comm) / stage speed
  std::uint64_t params = 0;
  std::uint64_t memory_bytes = 0;  ///< weights, gradients, optimizer state and live activations

  int layerCount() const { return last - first + 1; }
  bool operator==(const StageCost& other) const;
};

/// A split of the layer chain into contiguous, non-empty stages, with its predicted figures.
struct Partition {
  std::string method;  ///< "compute", "params", "uniform", ...
  std::vector<StageCost> stages;
  double bottleneck_ms = 0.0;
  double lower_bound_ms = 0.0;
  double predicted_step_ms = 0.0;
  double predicted_bubble = 0.0;  ///< fraction of the step, 0..1
  std::map<std::string, std::string> outputs;  ///< framework format name -> text

  /// Layers per stage, e.g. {4, 5, 5, 3}.
  std::vector<int> layersPerStage() const;
  bool operator==(const Partition& other) const;
};

}  // namespace stagecut
