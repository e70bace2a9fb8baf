#pragma once

// A planned layout in each framework's own words: Megatron-LM's command-line flags and
// torchtitan's [parallelism] and [training] settings. The split inside them is the partitioner's
// framework text (partitioner/framework_formats.h), so a layout and a split print alike.

#include <string>

#include "core/profile.h"
#include "planner/layout_evaluation.h"

namespace stagecut {

/// Megatron-LM's flags for `figures`: --tensor-model-parallel-size (and --sequence-parallel),
/// --context-parallel-size, --pipeline-model-parallel-size with the split as a
/// --pipeline-model-parallel-layout (a virtual pipeline's N x v stages), --micro-batch-size,
/// --global-batch-size, --use-distributed-optimizer with --overlap-grad-reduce and
/// --overlap-param-gather, and the recomputation flags; data parallelism is what the world size
/// leaves. `profile` is the one the split was made from. Throws Error (input) when the split is
/// not one Megatron's layout can express.
std::string megatronLayoutFlags(const LayoutFigures& figures, const Profile& profile, int global_batch);

/// torchtitan's settings for `figures` (its ParallelismConfig and TrainingConfig fields, as a
/// TOML job file or --parallelism.* flags take them): data_parallel_shard_degree or
/// data_parallel_replicate_degree, tensor_parallel_degree with enable_sequence_parallel,
/// context_parallel_degree, pipeline_parallel_degree, pipeline_parallel_schedule,
/// num_pp_microbatches and module_fqns_per_model_part; the tokens per microbatch and per step at
/// `seq_len`; and, as a comment, the activation checkpointing policy. Throws Error (input) when
/// the split is not one torchtitan can name.
std::string torchtitanLayoutToml(const LayoutFigures& figures, const Profile& profile, int global_batch, int seq_len);

}  // namespace stagecut
