#pragma once

#include <string>
#include <vector>

#include "core/memory_parts.h"
#include "core/placement.h"
#include "core/profile.h"
#include "prediction/recompute.h"
#include "schedule/pipeline_schedule.h"

namespace stagecut {

/// One layer's memory figures as the memory model reads them, bytes (per microbatch where they
/// change with it). Fields a profile lacks are 0, except gradients (then the weights' bytes) and
/// the input kept (then the input, up to the kept bytes: most layers save their input).
struct LayerMemoryTerms {
  double params = 0.0;
  double weights = 0.0;
  double gradients = 0.0;
  double largest_parameter = 0.0;
  double kept = 0.0;        ///< activation_bytes
  double input_kept = 0.0;  ///< of kept, the layer's input itself
  double input = 0.0;       ///< the previous layer's output_bytes (0 for layer 0: data, not counted)
  double output = 0.0;      ///< output_bytes; 0 for the last layer (the loss, one number)
  double forward_transient = 0.0;
  double backward_transient = 0.0;
  double weight_pending = 0.0;
};

/// The memory terms of every layer of `profile`.
std::vector<LayerMemoryTerms> layerMemoryTerms(const Profile& profile);

/// The profile fields the memory model would use and `profile` lacks ("forward_transient_bytes",
/// ...), each named once: the terms a prediction from it leaves out. Empty for a profile measured
/// by this version.
std::vector<std::string> missingMemoryFields(const Profile& profile);

/// The optimizer the memory model charges: state beyond weights and gradients, and the
/// temporaries of its step.
/// The share of its weights, gradients and optimizer state a rank holds when data parallelism
/// shards them: all of each (1) without; Megatron's distributed optimizer holds 1 / (DP x CP) of
/// the state, FSDP2 1 / (DP x CP) of all three.
struct MemorySharding {
  double weights = 1.0;
  double gradients = 1.0;
  double state = 1.0;
};

struct OptimizerMemory {
  /// Weights + gradients + optimizer state per parameter, bytes (adam 16: the state is what is
  /// left after the weights' and gradients' own bytes).
  double bytes_per_param = 16.0;
  /// The step's temporaries, in units of the stage's largest weight tensor: LibTorch's Adam
  /// builds sqrt(v) and its quotient per tensor (2); SGD updates in place (0).
  double step_temporaries = 2.0;
  MemorySharding sharding;  ///< what of it this rank holds
};

/// `--optimizer NAME`: "none" (no state: 8 bytes per parameter, weights and gradients, fp32),
/// "sgd" (8), "sgd-momentum" (12), "adam" (16: two moments) and "adam-mixed" (18: bf16 weights,
/// fp32 gradients, master weights and moments, as Megatron keeps them; ZeRO paper, section 3.1).
/// A bfloat16 or float16 profile's gradients are float32 (layerMemoryTerms), whatever the name.
/// Throws Error (input) with the nearest name otherwise.
OptimizerMemory optimizerMemory(const std::string& name);

/// The names optimizerMemory() knows, in the order help texts list them.
const std::vector<std::string>& optimizerNames();

/// How a rank runs its stage, as far as memory goes.
struct StageMemoryRules {
  bool splits_backward = false;  ///< W apart from B (zero-bubble schedules)
  /// The layers that recompute (keptBytesOfLayer); nullptr or none marked: no recomputation.
  /// All marked is full recomputation: the stage is one checkpoint, B builds all of it again;
  /// otherwise each recomputed layer is its own, and B holds the largest one's again.
  const RecomputeOption* recompute = nullptr;
  OptimizerMemory optimizer;
};

/// One rank's (model stage's) memory terms, bytes: what is held for the whole step, what each
/// microbatch holds between its ops, and each op's temporaries. docs/metrics.md gives the rules.
struct StageMemoryTerms {
  double weights = 0.0;
  double gradients = 0.0;  ///< from the first backward (B, or W where split) of the step
  double optimizer = 0.0;  ///< the optimizer's state
  /// Per microbatch, from F to B (to W where split): the activations the stage keeps, the
  /// received input and the output it sent (held until the next rank answers).
  double kept = 0.0;
  /// Per microbatch, from B to W (split only): the gradients W starts from.
  double pending = 0.0;
  /// With recomputation: what B builds again before its backward.
  double recomputed = 0.0;
  double received_gradient = 0.0;  ///< during B: the gradient of the stage's output
  double sent_gradient = 0.0;      ///< per microbatch from B to the step's end: the input's gradient
  /// Above the microbatch's whole kept bytes, the most its forward holds on the way: a layer's
  /// temporaries, less the activations of the layers after it, not yet there.
  double forward_transient = 0.0;
  /// Above what is alive when B starts, the most its backward holds on the way: a layer's
  /// temporaries, less the activations of the layers after it, already freed (with the graph
  /// kept for W, and for W itself, none are: the largest layer's temporaries).
  double backward_transient = 0.0;
  /// W's temporaries: the largest backward temporaries of a layer with weights (W runs only
  /// their part of the backward).
  double weight_transient = 0.0;
  double allreduce_transient = 0.0; ///< the flat buffer of a data-parallel all-reduce
  double optimizer_transient = 0.0; ///< the optimizer step's temporaries
};

/// The terms of any stage first..last of a chain of `layers` under `rules`, in O(log L) per range
/// from prefix sums and max trees built once (the partitioner asks for every range, the
/// prediction for its stages: one formula for both).
class StageMemoryTable {
 public:
  StageMemoryTable(std::vector<LayerMemoryTerms> layers, const StageMemoryRules& rules);
  StageMemoryTerms terms(int first, int last) const;
  int layerCount() const { return static_cast<int>(layers_.size()); }

 private:
  double sum(const std::vector<double>& prefix, int first, int last) const {
    return prefix[static_cast<std::size_t>(last + 1)] - prefix[static_cast<std::size_t>(first)];
  }
  double largest(const std::vector<double>& tree, int first, int last) const;

  std::vector<LayerMemoryTerms> layers_;
  bool splits_backward_ = false;
  bool full_recompute_ = false;  // every layer of the chain recomputes
  std::vector<char> recomputed_;
  OptimizerMemory optimizer_;
  std::vector<double> weights_, gradients_, optimizer_state_, kept_, run_inputs_, recomputed_kept_, held_outputs_,
      pending_;
  std::vector<double> activation_prefix_;
  std::vector<double> largest_parameter_, forward_transient_, backward_transient_, weight_transient_,
      largest_recomputed_;
  // Max trees of a layer's temporaries plus the activations of the layers before it (forward)
  // or up to it (backward): the walks of terms().
  std::vector<double> forward_walk_, backward_walk_;
  std::vector<double> split_backward_;  // a layer's B temporaries beyond its input's gradient
};

/// The terms of one stage first..last (a StageMemoryTable for one range).
StageMemoryTerms stageMemoryTerms(const std::vector<LayerMemoryTerms>& layers, int first, int last,
                                  const StageMemoryRules& rules);

/// What is alive at one point of a rank's step, as multiples of one chunk's StageMemoryTerms (or
/// of the rank's, where rankMemoryStates folds its chunks into one): the memory state at the peak
/// of one op (or of the optimizer step that ends the step).
struct MemoryState {
  enum class Transient { kNone, kForward, kBackward, kWeight, kAllReduce, kOptimizer };
  double kept = 0.0;     ///< microbatches whose kept bytes are alive
  double pending = 0.0;  ///< microbatches between B and W
  double sent = 0.0;     ///< sent gradients not yet delivered
  bool gradients = false;
  bool received = false;    ///< the op holds a received gradient
  /// The receive posted for the next op that receives (the runtime posts it one receiving op
  /// ahead, runtime/stage_executor.cpp): that op's input (S bytes) or gradient (R bytes).
  double posted_input = 0.0;
  double posted_gradient = 0.0;
  bool recomputes = false;  ///< the op builds the recomputed activations
  Transient transient = Transient::kForward;

  bool operator==(const MemoryState& other) const;
};

/// Bytes alive at `state` on a stage of `terms`.
double memoryStateBytes(const MemoryState& state, const StageMemoryTerms& terms);

/// The parts of memoryStateBytes (core/memory_parts.h): the received and sent gradients are
/// its buffers, recomputed activations count with the op's temporaries.
MemoryParts memoryStateParts(const MemoryState& state, const StageMemoryTerms& terms);

/// The parts alive on a rank whose local chunk c has terms `terms[c]` and is in state
/// `states[c]`: the chunks' bytes add up, their temporaries do not (one op runs at a time; the
/// optimizer step's are those of the rank's largest weight tensor).
MemoryParts rankStateParts(const std::vector<MemoryState>& states, const std::vector<StageMemoryTerms>& terms);

/// Per op of `ops` (one per op, in order, then the optimizer step's), the state of each of
/// `rank`'s local chunks under `placement` at the op's peak. A chunk's kept and pending count its
/// own microbatches; only the chunk the op runs holds the op's temporaries, its received gradient
/// and (for the next op that receives) the posted buffer. A chunk's input and its output's
/// gradient arrive by message where the neighbouring chunk runs on another rank; where it runs on
/// this one (a V's turn, a one-rank loop) they are handed over in memory: no receive is posted,
/// and B's input gradient lives until the chunk before it takes it in its own B, not to the step's
/// end as a sent one does. The chain's first chunk receives no input and sends no gradient, its
/// last receives no gradient.
std::vector<std::vector<MemoryState>> rankChunkMemoryStates(const RankOps& ops, const Placement& placement, int rank,
                                                            bool splits_backward, bool recomputes);

/// rankChunkMemoryStates folded into one state per op for a rank whose v chunks each hold 1 / v
/// of its per-microbatch bytes (the rank's terms are those of all its layers): what the
/// partitioner evaluates for every range.
std::vector<MemoryState> rankMemoryStates(const RankOps& ops, const Placement& placement, int rank,
                                          bool splits_backward, bool recomputes);

/// The rows of rankChunkMemoryStates (one state per local chunk) that no other row dominates,
/// chunk by chunk: what a rank's peak is the largest of, for any chunks' terms.
std::vector<std::vector<MemoryState>> rankPeakCandidates(const std::vector<std::vector<MemoryState>>& states);

/// Whether `option` recomputes some layer of first..last.
bool recomputesSome(const RecomputeOption* option, int first, int last);

/// The distinct states of rankMemoryStates, none of which another dominates: what a stage's peak
/// is the largest of, for any terms (the partitioner evaluates these for every range).
std::vector<MemoryState> peakCandidates(const std::vector<MemoryState>& states);

}  // namespace stagecut
