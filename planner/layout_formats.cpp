#include "planner/layout_formats.h"

#include "core/error.h"
#include "partitioner/framework_formats.h"

namespace stagecut {

namespace {

// The split's text in `format`'s words, its first line only (megatron then offers flags
// instead of the layout: the layout is what the parallel sizes go with).
// The split alone in the framework's words: the partitioner adds a TP shard's own degree to it,
// which the layout prints itself, so the profile is given without one.
std::string splitText(FrameworkFormat format, const LayoutFigures& figures, Profile profile) {
  writeParallelDegrees(ParallelDegrees{}, profile.model.config);
  const std::string text = formatSplit(format, profile, figures.split.layersPerStage(), figures.split.placement,
                                       figures.layout.schedule);
  return format == FrameworkFormat::kMegatron ? text.substr(0, text.find('\n')) : text;
}

std::string megatronRecomputeFlags(const RecomputePolicy& policy, const Partition& split) {
  // auto chose per stage: Megatron takes one granularity; full wherever a stage recomputes it all.
  bool full = policy.mode == RecomputePolicy::Mode::kFull, selective = policy.mode == RecomputePolicy::Mode::kSelective;
  for (const StageCost& stage : split.stages) {
    full = full || stage.recompute == std::optional<std::string>("full");
    selective = selective || (stage.recompute && stage.recompute->rfind("selective", 0) == 0);
  }
  if (full) return " --recompute-granularity full --recompute-method uniform --recompute-num-layers 1";
  if (selective) return " --recompute-granularity selective";
  return "";
}

}  // namespace

std::string megatronLayoutFlags(const LayoutFigures& figures, const Profile& profile, int global_batch) {
  const ParallelLayout& layout = figures.layout;
  std::string flags = "--tensor-model-parallel-size " + std::to_string(layout.degrees.tensor_parallel);
  if (layout.degrees.sequence_parallel && layout.degrees.tensor_parallel > 1) flags += " --sequence-parallel";
  if (layout.degrees.context_parallel > 1) flags += " --context-parallel-size " + std::to_string(layout.degrees.context_parallel);
  if (layout.placement.ranks > 1) {
    const std::string split = splitText(FrameworkFormat::kMegatron, figures, profile);
    // A virtual pipeline's layout names its pipeline size itself.
    if (split.find("--pipeline-model-parallel-size") == std::string::npos) {
      flags += " --pipeline-model-parallel-size " + std::to_string(layout.placement.ranks);
    }
    flags += " " + split;
  }
  flags += " --micro-batch-size " + std::to_string(layout.microbatch_size) + " --global-batch-size " +
           std::to_string(global_batch);
  if (layout.sharded_data_parallel) flags += " --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather";
  return flags + megatronRecomputeFlags(layout.recompute, figures.split);
}

std::string torchtitanLayoutToml(const LayoutFigures& figures, const Profile& profile, int global_batch, int seq_len) {
  const ParallelLayout& layout = figures.layout;
  const int dp = layout.data_parallel;
  std::string toml = "[parallelism]\n";
  toml += "data_parallel_shard_degree = " + std::to_string(layout.sharded_data_parallel ? dp : 1) + "\n";
  toml += "data_parallel_replicate_degree = " + std::to_string(layout.sharded_data_parallel ? 1 : dp) + "\n";
  toml += "tensor_parallel_degree = " + std::to_string(layout.degrees.tensor_parallel) + "\n";
  if (layout.degrees.tensor_parallel > 1) {
    toml += std::string("enable_sequence_parallel = ") + (layout.degrees.sequence_parallel ? "true" : "false") + "\n";
  }
  toml += "context_parallel_degree = " + std::to_string(layout.degrees.context_parallel) + "\n";
  toml += "pipeline_parallel_degree = " + std::to_string(layout.placement.ranks) + "\n";
  if (layout.placement.ranks > 1) {
    toml += "pipeline_parallel_schedule = \"" + std::string(pytorchScheduleName(layout.schedule)) + "\"\n";
    toml += "num_pp_microbatches = " + std::to_string(layout.microbatches) + "\n";
    const std::string split = splitText(FrameworkFormat::kTorchtitan, figures, profile);
    toml += "module_fqns_per_model_part = " + split.substr(split.find('=') + 1, split.find('\n') - split.find('=') - 1) + "\n";
  }
  toml += "\n[training]\n";
  toml += "num_tokens_per_microbatch_per_dp_rank = " + std::to_string(static_cast<long long>(layout.microbatch_size) * seq_len) + "\n";
  toml += "num_tokens_per_train_step = " + std::to_string(static_cast<long long>(global_batch) * seq_len) + "\n";
  toml += "max_context_length = " + std::to_string(seq_len) + "\n";
  const std::string recompute = megatronRecomputeFlags(layout.recompute, figures.split);
  toml += "# activation checkpointing: " +
          std::string(recompute.find("full") != std::string::npos      ? "FullAC"
                      : recompute.find("selective") != std::string::npos ? "SelectiveAC"
                                                                         : "none") +
          " (torchtitan.distributed.activation_checkpoint, set in the config function)\n";
  return toml;
}

}  // namespace stagecut
