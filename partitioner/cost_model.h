#pragma once

#include <cstddef>
#include <vector>

namespace stagecut {

/// The partitioner's inputs after units and options are resolved: per layer, per boundary and
/// per stage numbers in ms and bytes. Tests and benchmarks build it directly; the CLI builds it
/// from a Profile with buildChainCosts() (partition_options.h).
struct ChainCosts {
  /// Per layer: forward + backward ms per microbatch (plus one more forward with recomputation).
  std::vector<double> compute_ms;
  /// Per boundary b (after layer b, L - 1 entries): ms to send its activation forward and its
  /// gradient back. Empty when no communication is modelled.
  std::vector<double> boundary_comm_ms;
  /// Per layer: weights, gradients and optimizer state, bytes.
  std::vector<double> state_bytes;
  /// Per layer: activations kept for the backward, bytes per microbatch.
  std::vector<double> activation_bytes;
  /// Per layer: bytes of the layer's input (what a stage starting there keeps with recompute).
  std::vector<double> input_bytes;
  /// With activation recomputation a stage keeps only its input per microbatch in flight, plus
  /// the largest layer's activations while it recomputes.
  bool recompute = false;
  /// Per stage: relative speed of its device (1 = the profiled one); costs are divided by it.
  std::vector<double> stage_speed;
  /// Per stage: microbatches whose activations are alive at once (GPipe: M; 1F1B: min(N - s, M)).
  std::vector<int> in_flight;
  /// Per stage: memory cap in bytes; empty when there is none.
  std::vector<double> memory_cap_bytes;
};

/// Stage costs and memory of contiguous layer ranges in O(1) (O(log L) for the largest layer's
/// activations with recompute), from prefix sums over a ChainCosts. Stage s holding layers
/// first..last (inclusive) costs (compute + comm in + comm out) / speed[s].
class CostModel {
 public:
  /// Checks sizes and signs; throws Error (input) describing the first inconsistency.
  explicit CostModel(ChainCosts costs);

  int layerCount() const { return static_cast<int>(costs_.compute_ms.size()); }
  int stageCount() const { return static_cast<int>(costs_.stage_speed.size()); }
  const ChainCosts& costs() const { return costs_; }
  bool hasCommunication() const { return has_comm_; }
  bool hasMemoryCaps() const { return !costs_.memory_cap_bytes.empty(); }
  /// True when every stage runs at the same speed.
  bool uniformSpeed() const { return uniform_speed_; }

  /// Sum of compute_ms over first..last.
  double computeMs(int first, int last) const { return compute_prefix_[last + 1] - compute_prefix_[first]; }
  /// Compute of layers 0..count-1, ms (count = 0..L).
  double computePrefixMs(int count) const { return compute_prefix_[count]; }
  /// Total compute of the chain, ms.
  double totalComputeMs() const { return compute_prefix_.back(); }
  /// ms of receiving the input of a stage starting at `first` (0 for the first layer).
  double commInMs(int first) const {
    return has_comm_ && first > 0 ? costs_.boundary_comm_ms[first - 1] : 0.0;
  }
  /// ms of sending the output of a stage ending at `last` (0 for the last layer).
  double commOutMs(int last) const {
    return has_comm_ && last + 1 < layerCount() ? costs_.boundary_comm_ms[last] : 0.0;
  }
  /// Cost of stage `stage` holding first..last, ms per microbatch.
  double stageCostMs(int stage, int first, int last) const {
    return (computeMs(first, last) + commInMs(first) + commOutMs(last)) / costs_.stage_speed[stage];
  }
  /// Memory of stage `stage` holding first..last, bytes.
  double memoryBytes(int stage, int first, int last) const;
  /// The part of memoryBytes that only grows when the range grows (all of it without recompute).
  double growingMemoryBytes(int stage, int first, int last) const;
  /// Cap of `stage` in bytes; +infinity without caps.
  double capBytes(int stage) const;
  /// Whether first..last fits the memory cap of `stage`.
  bool fitsMemory(int stage, int first, int last) const {
    return !hasMemoryCaps() || memoryBytes(stage, first, last) <= capBytes(stage);
  }
  /// Whether stage memory only grows with the range (no recompute, or no caps at all), which
  /// is what sliding-window probes rely on.
  bool memoryIsMonotone() const { return !hasMemoryCaps() || !costs_.recompute; }
  /// The same chain and stages in reverse order (stage N-1 first, layer L-1 first). Only
  /// meaningful when memoryIsMonotone(): the recompute input term does not mirror.
  CostModel reversed() const;

 private:
  double largestActivationBytes(int first, int last) const;

  ChainCosts costs_;
  bool has_comm_ = false;
  bool uniform_speed_ = true;
  std::vector<double> compute_prefix_;
  std::vector<double> state_prefix_;
  std::vector<double> activation_prefix_;
  std::vector<double> activation_max_tree_;  ///< segment tree, only with recompute
};

}  // namespace stagecut
