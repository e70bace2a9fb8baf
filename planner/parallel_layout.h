#pragma once

// A layout is the whole decision for G GPUs: the tensor-, context-, pipeline- and data-parallel
// degrees (their product G), the chunks each pipeline rank holds, the schedule, the microbatch
// size and count, recomputation and whether data parallelism shards the optimizer state. The
// planner's search and a user's --fix layout are both this type, priced by one evaluator.

#include <optional>
#include <string>
#include <vector>

#include "core/parallel_degrees.h"
#include "core/placement.h"
#include "prediction/recompute.h"
#include "schedule/schedule_kind.h"

namespace stagecut {

/// The engine the layout is planned for: what it runs (schedules, sharding) and how it is
/// printed. Megatron-LM runs 1F1B and interleaved 1F1B with its distributed optimizer (optimizer
/// state sharded over DP x CP); torchtitan runs PyTorch's schedules (1F1B, interleaved 1F1B,
/// ZB-V, DualPipeV) with FSDP2 (parameters, gradients and optimizer state sharded over DP).
enum class Framework { kMegatron, kTorchtitan };

/// "megatron" or "torchtitan".
const char* frameworkName(Framework framework);

/// The framework called `name` ("megatron" or "torchtitan"). Throws Error (input) naming
/// --format and the nearest name otherwise.
Framework parseFramework(const std::string& name);

/// The schedules `framework` runs, in the CLI's order: Megatron-LM's 1F1B and its virtual
/// pipeline; torchtitan's PyTorch schedule classes, which hold no one-chunk ZB-H1 (PyTorch runs
/// zero bubble only interleaved). The one list the search and its checks read.
std::vector<ScheduleKind> frameworkSchedules(Framework framework);

/// Whether the framework's sharded data parallelism shards the weights and gradients too
/// (torchtitan's FSDP2), not only the optimizer state (Megatron's distributed optimizer).
bool shardsWeights(Framework framework);

/// What the framework calls its sharded data parallelism: "dist-opt" or "fsdp".
const char* shardedDataParallelName(Framework framework);

/// One layout of G = TP x CP x PP x DP GPUs.
struct ParallelLayout {
  ParallelDegrees degrees;         ///< TP (with sequence parallelism) and CP: the profile's shard
  int data_parallel = 1;           ///< DP
  ScheduleKind schedule = ScheduleKind::kOneFOneB;
  Placement placement;             ///< PP ranks and v chunks per rank
  int microbatch_size = 1;         ///< samples per microbatch
  int microbatches = 1;            ///< M per data-parallel replica and step
  RecomputePolicy recompute;       ///< none, selective, full, or auto (per stage)
  /// Megatron's distributed optimizer (its state over DP x CP), or torchtitan's FSDP2 (parameters,
  /// gradients and state over DP); off: every replica holds all of it and all-reduces gradients.
  bool sharded_data_parallel = false;

  /// TP x CP x PP x DP.
  long long gpus() const;
  /// Samples per step over every replica: microbatch size x M x DP.
  long long globalBatch() const;
};

/// "TP 4 CP 2 PP 4 v 5 DP 2, mbs 1 x 32, interleaved-1f1b, recompute none, dist-opt": one line.
std::string layoutText(const ParallelLayout& layout, Framework framework);

/// What `plan --fix` may pin: any of tp, cp, pp, dp, v, mbs, schedule, recompute and
/// sharded ("dist-opt"/"fsdp" on or off); absent fields are searched.
struct LayoutPin {
  std::optional<int> tensor_parallel, context_parallel, pipeline_parallel, data_parallel, chunks, microbatch_size;
  std::optional<ScheduleKind> schedule;
  std::optional<RecomputePolicy> recompute;
  std::optional<bool> sharded_data_parallel;

  /// Whether `layout` agrees with every pinned field.
  bool admits(const ParallelLayout& layout) const;
};

/// Parses `--fix tp=4,cp=2,pp=4,v=5,mbs=1,schedule=interleaved-1f1b,recompute=full,dist-opt=on`.
/// Throws Error (input) naming --fix, the key and the fix for an unknown key, a value that is
/// not a whole number from 1 up (or a schedule, recompute mode, on/off), or a key given twice.
LayoutPin parseLayoutPin(const std::string& text, const Profile& profile);

}  // namespace stagecut
