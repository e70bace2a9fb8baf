#pragma once

// The one evaluator of a layout: the profile's shard at the layout's (TP, CP) and microbatch
// size, its collectives priced on the cluster's links, the exact split for its pipeline and
// chunks under the GPU's memory, and the step simulated with every data-parallel collective
// charged where the framework does not overlap it. The search and `plan --fix` both call it, so
// a plan never disagrees with the what-if of its own choice.

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/partition.h"
#include "core/profile.h"
#include "planner/cluster.h"
#include "planner/parallel_layout.h"
#include "planner/sized_profile.h"

namespace stagecut {

/// What a plan is for beyond the layouts: the global batch, the engine and the optimizer.
struct PlanTarget {
  int global_batch = 0;                      ///< samples per step over every replica
  Framework framework = Framework::kMegatron;
  std::string optimizer = "adam-mixed";      ///< optimizerMemory()'s name
  double fit_tolerance = 0.1;                ///< of SizedProfile, for sizes between measured ones
};

/// The profile, cluster and target a plan prices layouts against, with each degree's costs over
/// microbatch sizes built once (SizedProfile).
class PlanInputs {
 public:
  /// Throws Error (input) naming `source` for a profile without microbatch sizes or sequence
  /// length, and as checkCluster does.
  PlanInputs(Profile profile, std::string source, Cluster cluster, PlanTarget target);

  const Profile& profile() const { return profile_; }
  const std::string& source() const { return source_; }
  const Cluster& cluster() const { return cluster_; }
  const PlanTarget& target() const { return target_; }
  /// The degrees the profile measured (measuredDegrees).
  const std::vector<ParallelDegrees>& degrees() const { return degrees_; }
  /// The measured microbatch sizes of `degrees`' shard.
  const std::vector<int>& microbatchSizes(const ParallelDegrees& degrees) const;
  /// `degrees`' shard at microbatch size `size`, its collectives not priced yet. Throws Error
  /// (input) as SizedProfile::at does.
  Profile shardAt(const ParallelDegrees& degrees, int size) const;
  /// Parameters of the whole model (the TP 1 shard's, or a shard's times its TP degree).
  double modelParams() const { return model_params_; }
  /// Whether the profile was measured on the cluster's GPU (profiledOnClusterGpu): MFU is given then.
  bool onClusterGpu() const { return on_cluster_gpu_; }

 private:
  const SizedProfile& sized(const ParallelDegrees& degrees) const;

  Profile profile_;
  std::string source_;
  Cluster cluster_;
  PlanTarget target_;
  std::vector<ParallelDegrees> degrees_;
  double model_params_ = 0.0;
  bool on_cluster_gpu_ = false;
  mutable std::vector<std::pair<ParallelDegrees, std::unique_ptr<SizedProfile>>> sized_;
};

/// One layout priced: its split and simulated step, what its time went to and its memory.
struct LayoutFigures {
  ParallelLayout layout;
  Partition split;                 ///< the exact (chunked) split of its pipeline
  double step_ms = 0.0;            ///< the step, every exposed collective included
  double bubble = 0.0;             ///< idle fraction of the pipeline's compute
  double compute_ms = 0.0;         ///< the slowest rank's busy time per step
  double tensor_parallel_ms = 0.0; ///< that rank's TP collectives per step (in compute_ms)
  double data_parallel_ms = 0.0;   ///< data-parallel collectives not hidden by the pipeline
  std::vector<double> peak_bytes;  ///< per pipeline rank: the memory timeline's peak
  double fullest_bytes = 0.0;      ///< the largest of peak_bytes
  double tokens_per_s_per_gpu = 0.0;
  /// 6 x the model's parameters x tokens per step over (step x G x the GPU's peak), attention's
  /// FLOPs left out; where the profile's device is the cluster's GPU.
  std::optional<double> mfu;

  /// Whether the split's slowest rank is proven the least (the chunked search may stop at its
  /// node budget with the best found), and the proven lower bound it is held to.
  bool split_proven = true;
  double split_bound_ms = 0.0;

  /// The fullest rank's memory over the GPU's.
  double memoryShare(const Cluster& cluster) const { return fullest_bytes / static_cast<double>(cluster.memory_bytes); }
};

/// The chunked search's node budget per layout: a plan prices hundreds of layouts, and a chain of
/// identical blocks cut into many chunks has many equally good chunkings the search cannot tell
/// apart from the bound; the split found is kept with its proven gap (LayoutFigures).
inline constexpr std::int64_t kLayoutChunkSearchNodes = 50'000;

/// Why a layout cannot run, as a category (for the plan's summary) and a phrase.
struct LayoutProblem {
  enum class Kind { kMemory, kDivisibility, kFramework, kProfile };
  Kind kind = Kind::kDivisibility;
  std::string reason;
};

/// "memory", "divisibility", "framework rule" or "not profiled".
const char* layoutProblemName(LayoutProblem::Kind kind);

/// Why `layout` cannot run before it is priced (its product against G, the global batch, the
/// framework's schedules and sharding, the schedule's M against N, the degrees the profile
/// measured, chunks against layers, groups that would cross nodes); nullopt when it can.
std::optional<LayoutProblem> layoutProblem(const PlanInputs& inputs, const ParallelLayout& layout);

/// Prices `layout` (layoutProblem() first). Throws Error (input) with a LayoutProblem's reason
/// when it cannot run, a memory one when no split fits the GPU.
LayoutFigures evaluateLayout(const PlanInputs& inputs, const ParallelLayout& layout);

/// The lower bound of `layout`'s step that the search prunes with: the shard's compute per
/// microbatch (collectives priced) over the pipeline's ranks, times M: no split and no schedule
/// does better. The layout must pass layoutProblem().
double stepLowerBoundMs(const PlanInputs& inputs, const ParallelLayout& layout);

}  // namespace stagecut
