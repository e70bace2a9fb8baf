#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/profile.h"

namespace stagecut {

/// One way a stage can keep activations for its backward. Layers marked `recomputed` do not
/// keep theirs: each run of consecutive recomputed layers keeps only its input per microbatch,
/// runs its forward again before the backward (`extra_ms` per layer), and holds the largest
/// recomputed layer's activations meanwhile. No layer marked: no recomputation ("none"); all
/// marked: full recomputation (a stage keeps its input only).
struct RecomputeOption {
  std::string name;              ///< "none", "full" or "selective:<kinds>", for outputs
  std::vector<char> recomputed;  ///< per layer; empty: none
  std::vector<double> extra_ms;  ///< per layer: the extra forward, ms (0 where not recomputed)
};

/// `--recompute`: how stages keep activations for their backward.
struct RecomputePolicy {
  enum class Mode {
    kNone,       ///< keep every layer's activations
    kFull,       ///< every stage keeps only its input and reruns its forward
    kSelective,  ///< layers of `kinds` keep only their inputs and rerun their forward
    kAuto,       ///< per stage, the cheapest of none, selective (with kinds) and full that fits
  };
  Mode mode = Mode::kNone;
  /// kSelective, and kAuto from "auto:<kinds>": LayerCost::kind values, as given.
  std::vector<std::string> kinds;

  /// "none", "full", "auto", "auto:Attention" or "selective:Attention+MLP".
  std::string text() const;
};

/// Parses `--recompute none|full|auto|auto:<kinds>|selective:<kinds>` (kinds separated by ',' or
/// '+'; auto:<kinds> lets each stage choose among none, selective:<kinds> and full), checking
/// each kind against the profile's layers. Throws Error (input) naming the flag, the unknown mode
/// or kind and the nearest name: "--recompute selective:Atention: the profile has no layer of kind
/// 'Atention', did you mean 'Attention'?".
RecomputePolicy parseRecomputePolicy(const std::string& text, const Profile& profile);

/// The recompute options a policy gives the cost model (ChainCosts::recompute_options): none,
/// full, selective (the layers of its kinds) or, for auto, none then full (none, selective, full
/// for auto:<kinds>). Extra forwards are
/// the layers' recomputeMedianMs().
std::vector<RecomputeOption> recomputeOptions(const Profile& profile, const RecomputePolicy& policy);

/// The recompute option of one stage's mode as a partition file names it ("none", "full",
/// "selective:<kinds>"). Throws Error (input) as parseRecomputePolicy, and for "auto", which
/// is a policy for the partitioner, not a stage's mode.
RecomputeOption stageRecomputeOption(const Profile& profile, const std::string& mode);

/// What layer `layer` keeps per microbatch between its forward and its backward: its own
/// activations, or, recomputed, only its input where a recomputed run starts (`run_starts`:
/// the stage's first layer, or one after a layer that is not recomputed), and nothing inside a
/// run. The one kept-bytes rule: the cost model sums it by prefix tables, everything else by
/// stageKeptBytes.
inline double keptBytesOfLayer(bool recomputed, bool run_starts, double activation_bytes, double input_bytes) {
  if (!recomputed) return activation_bytes;
  return run_starts ? input_bytes : 0.0;
}

/// Per microbatch, the activation bytes a stage of layers first..last keeps for its backward
/// under `option` (keptBytesOfLayer over its layers; a layer's input is the previous layer's
/// output_bytes).
std::uint64_t stageKeptBytes(const Profile& profile, const RecomputeOption& option, int first, int last);

/// The extra forward per microbatch that `option` runs on layers first..last, ms.
double stageRecomputeMs(const RecomputeOption& option, int first, int last);

}  // namespace stagecut
