#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "prediction/recompute.h"
#include "prediction/stage_memory.h"

namespace stagecut {

/// The partitioner's inputs after units and options are resolved: per layer, per boundary and
/// per stage numbers in ms and bytes. Tests and benchmarks build it directly; the CLI builds it
/// from a Profile with buildChainCosts() (partition_options.h).
struct ChainCosts {
  /// Per layer: forward + backward ms per microbatch, without recomputation.
  std::vector<double> compute_ms;
  /// Per boundary b (after layer b, L - 1 entries): ms to send its activation forward and its
  /// gradient back. Empty when no communication is modelled.
  std::vector<double> boundary_comm_ms;
  /// Per layer: weights, gradients and optimizer state, bytes.
  std::vector<double> state_bytes;
  /// Per layer: activations kept for the backward, bytes per microbatch.
  std::vector<double> activation_bytes;
  /// Per layer: bytes of the layer's input (what a run of recomputed layers starting there keeps).
  std::vector<double> input_bytes;
  /// The ways a stage may keep its activations; each stage takes the cheapest one that fits its
  /// cap (the earlier one on ties). Empty: no recomputation.
  std::vector<RecomputeOption> recompute_options;
  /// Data parallel (D > 1): per layer, the gradient bytes all-reduced once per step; empty: none.
  std::vector<double> gradient_bytes;
  /// A ring all-reduce of b bytes takes allreduce_fixed_ms + b x allreduce_ms_per_byte.
  double allreduce_fixed_ms = 0.0;
  double allreduce_ms_per_byte = 0.0;
  /// Per layer: backward ms, the cool-down behind which a stage's all-reduce hides (with
  /// gradient_bytes).
  std::vector<double> backward_ms;
  /// Per stage: how many stages finish their last backward after it (stage s: s in GPipe and
  /// 1F1B). Its all-reduce overlaps that many backwards, estimated by its own; empty: 0.
  std::vector<int> allreduce_overlap;
  /// The step's length in stage slots (M + N - 1): an exposed all-reduce adds its share to the
  /// per-microbatch stage cost.
  double allreduce_slots = 1.0;
  /// Per stage: relative speed of its device (1 = the profiled one); costs are divided by it.
  std::vector<double> stage_speed;
  /// Per stage: microbatches' worth of its kept activations alive at once (GPipe: M; 1F1B:
  /// min(N - s, M); the others from their op lists: schedule/in_flight.h).
  std::vector<double> in_flight;
  /// Per stage: memory cap in bytes; empty when there is none.
  std::vector<double> memory_cap_bytes;
  /// The memory timeline's terms (prediction/stage_memory.h, as a Profile gives them): when
  /// set, a stage's memory is its predicted peak, the largest of `peak_states[stage]` over the
  /// stage's StageMemoryTerms, the number predictPipeline() reports for that split. Empty: the
  /// sum of state_bytes, in_flight x kept bytes and the largest recomputed layer (hand-built
  /// chains of tests and benchmarks).
  std::vector<LayerMemoryTerms> layer_memory;
  std::vector<std::vector<MemoryState>> peak_states;  ///< per stage: peakCandidates of its op list
  bool splits_backward = false;                        ///< the schedule splits W off
  OptimizerMemory optimizer;
  /// Per boundary b (after layer b, L - 1 entries): whether a stage may end there. A framework
  /// that cannot build some stages (a loss alone, a split embedding) forbids those cuts
  /// (partitioner/split_rules.h). Empty: every cut is allowed.
  std::vector<char> cut_allowed;
};

/// Stage costs and memory of contiguous layer ranges in O(1) per recompute option (O(log L) for
/// the largest recomputed layer's activations), from prefix sums over a ChainCosts. Stage s
/// holding layers first..last (inclusive) costs (compute + extra forward + comm in + comm out) /
/// speed[s] + exposed all-reduce / slots, where the exposed all-reduce is
/// max(0, all-reduce - overlap[s] x backward / speed[s]), under the cheapest recompute option that
/// fits its cap.
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
  /// Whether a stage may end at layer `last` (the last layer always ends one).
  bool canEndAt(int last) const {
    return costs_.cut_allowed.empty() || last + 1 >= layerCount() || costs_.cut_allowed[last] != 0;
  }
  /// Whether some cut is forbidden.
  bool restrictsCuts() const { return restricts_cuts_; }

  /// Sum of compute_ms over first..last (with the recompute option's extra forward when there
  /// is only one option); a lower bound of stageCostMs x speed.
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
  /// Cost of stage `stage` holding first..last, ms per microbatch, under its recompute choice
  /// (the first option's when none fits).
  double stageCostMs(int stage, int first, int last) const;
  /// Memory of stage `stage` holding first..last, bytes, under its recompute choice (the least
  /// of all options when none fits).
  double memoryBytes(int stage, int first, int last) const;
  /// memoryBytes by part, under the stage's recompute choice; absent without layer_memory.
  std::optional<MemoryParts> memoryParts(int stage, int first, int last) const;
  /// A lower bound of memoryBytes that only grows when the range grows (all of it without
  /// recomputation).
  double growingMemoryBytes(int stage, int first, int last) const;
  /// The recompute option stage `stage` takes over first..last: the cheapest that fits its cap
  /// (earlier on ties), -1 when none fits. 0 when there are no options.
  int recomputeChoice(int stage, int first, int last) const;
  /// Name of option `option` ("none" when there are no options).
  std::string recomputeName(int option) const;
  /// Extra forward ms per microbatch of option `option` over first..last (0 without options).
  double recomputeExtraMs(int option, int first, int last) const;
  /// Memory of stage `stage` over first..last under option `option`, bytes.
  double optionMemoryBytes(int option, int stage, int first, int last) const;
  /// Cost of stage `stage` over first..last under option `option`, ms per microbatch.
  double optionCostMs(int option, int stage, int first, int last) const;
  /// The all-reduce of first..last's gradients, ms per step (0 without data parallelism).
  double allReduceMs(int first, int last) const;
  /// The part of it that stage `stage` cannot hide behind later stages' cool-down, ms per step.
  double exposedAllReduceMs(int stage, int first, int last) const;
  /// Options: at least 1 (a plain "none" when the chain gives none).
  int recomputeOptionCount() const { return static_cast<int>(options_.size()); }
  /// Whether a stage's cost is compute + comm over its speed, with the best start of a range
  /// given by prefix sums: one recompute option and no all-reduce term.
  bool separableCost() const { return options_.size() == 1 && !has_allreduce_; }
  /// An upper bound of any stage's cost, ms per microbatch.
  double stageCostUpperBoundMs() const;
  /// Cap of `stage` in bytes; +infinity without caps.
  double capBytes(int stage) const;
  /// Whether first..last fits the memory cap of `stage`.
  bool fitsMemory(int stage, int first, int last) const {
    return !hasMemoryCaps() || memoryBytes(stage, first, last) <= capBytes(stage);
  }
  /// Whether some recompute option recomputes some layer.
  bool recomputes() const { return any_recomputed_; }
  /// Whether stage memory only grows with the range (no recomputed layer and no predicted peak,
  /// whose received and sent buffers depend on where a stage starts and ends; or no caps at all),
  /// which is what sliding-window probes rely on.
  bool memoryIsMonotone() const { return !hasMemoryCaps() || (!any_recomputed_ && memory_tables_.empty()); }
  /// The same chain and stages in reverse order (stage N-1 first, layer L-1 first). Only
  /// meaningful when memoryIsMonotone() and separableCost(): the recompute input term and the
  /// all-reduce overlap do not mirror.
  CostModel reversed() const;

 private:
  // Prefix sums and a max tree of one recompute option.
  struct OptionTables {
    bool any_recomputed = false;
    std::vector<double> extra_prefix;      // extra forward ms
    std::vector<double> kept_prefix;       // activation bytes of layers not recomputed
    std::vector<double> run_input_prefix;  // input bytes of layers that start a recomputed run
    std::vector<double> max_tree;          // activation bytes of recomputed layers, segment tree
  };
  double largestRecomputedBytes(const OptionTables& tables, int first, int last) const;
  /// The prefix tables of recomputation option `option`, its per-layer vectors filled in where empty.
  OptionTables optionTables(RecomputeOption& option) const;
  double stateBytes(int first, int last) const { return state_prefix_[last + 1] - state_prefix_[first]; }
  // The predicted peak (layer_memory set) of option `option`.
  double peakBytes(int option, int stage, int first, int last) const;

  ChainCosts costs_;
  bool has_comm_ = false;
  bool uniform_speed_ = true;
  bool any_recomputed_ = false;
  bool has_allreduce_ = false;
  bool restricts_cuts_ = false;
  std::vector<RecomputeOption> options_;
  std::vector<OptionTables> tables_;
  std::vector<StageMemoryTable> memory_tables_;  // per option, when layer_memory is set
  std::vector<double> compute_prefix_;
  std::vector<double> state_prefix_;
  std::vector<double> gradient_prefix_;
  std::vector<double> backward_prefix_;
};

}  // namespace stagecut
