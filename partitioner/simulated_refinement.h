#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/profile.h"
#include "partitioner/cost_model.h"
#include "partitioner/partition_options.h"
#include "prediction/pipeline_prediction.h"

namespace stagecut {

/// The split the event simulator finds fastest among those with the optimal bottleneck.
struct SimulatedRefinement {
  std::vector<int> layers_per_stage;
  double simulated_step_ms = 0.0;        ///< of the chosen split
  double exact_split_simulated_ms = 0.0; ///< of the solver's split, for comparison
  int candidates = 0;                    ///< optimal-bottleneck splits simulated
  bool truncated = false;                ///< more existed than kMaxCandidates
};

/// The simulated step of the split with `counts` layers per stage (chunks, with a placement), each
/// stage's recompute choice from `model`, predicted the way every command predicts a split but
/// without the memory timeline: for searches that compare many splits' steps.
double simulatedSplitStepMs(const Profile& profile, PredictionOptions prediction, const CostModel& model,
                            const std::vector<int>& counts, const std::optional<Placement>& placement);

/// How many optimal-bottleneck splits refineBySimulatedStep() simulates at most.
inline constexpr int kMaxRefinementCandidates = 256;

/// Simulates (schedule/simulator.h) the solver's split and up to kMaxRefinementCandidates other
/// splits with the same optimal bottleneck, in order of fewer layers earlier, and returns the one
/// with the smallest simulated step (the solver's split on ties). In 1F1B the step depends on
/// where the slowest stage sits, which sum + (M - 1) x bottleneck ignores. Stage forward and
/// backward times come from the profile (recompute adds a forward to the backward), divided by
/// the stage speed; each boundary's one-way transfer is half its modelled round trip.
/// Throws Error (input) as the simulator does for a schedule it cannot run.
SimulatedRefinement refineBySimulatedStep(const Profile& profile, const PartitionOptions& options,
                                          const CostModel& model, const std::vector<int>& exact_split);

}  // namespace stagecut
