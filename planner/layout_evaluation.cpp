#include "planner/layout_evaluation.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/precision.h"
#include "core/profile_shards.h"
#include "core/units.h"
#include "partitioner/chunked_partition.h"
#include "partitioner/split_rules.h"
#include "prediction/context_parallel_comm.h"
#include "prediction/pipeline_prediction.h"
#include "prediction/tensor_parallel_comm.h"

namespace stagecut {

PlanInputs::PlanInputs(Profile profile, std::string source, Cluster cluster, PlanTarget target)
    : profile_(std::move(profile)), source_(std::move(source)), cluster_(std::move(cluster)), target_(target) {
  checkCluster(cluster_);
  if (profile_.run.seq_len < 1) {
    throw Error(source_ + ": run.seq_len is missing; a plan counts tokens per second at the sequence the profile "
                "measured: profile the model again");
  }
  degrees_ = measuredDegrees(profile_, source_);
  on_cluster_gpu_ = profiledOnClusterGpu(profile_, cluster_);
  for (const ParallelDegrees& degrees : degrees_) {
    if (degrees.tensor_parallel != 1 || degrees.context_parallel != 1) continue;
    for (const LayerCost& layer : shardProfile(profile_, degrees, source_).layers) model_params_ += layer.params;
  }
  if (model_params_ == 0.0) {
    // No unsharded point: the smallest TP degree's shard, its params times the degree (the
    // replicated norms counted t times: a small overcount, for MFU only).
    const ParallelDegrees& smallest = degrees_.front();
    for (const LayerCost& layer : shardProfile(profile_, smallest, source_).layers) {
      model_params_ += static_cast<double>(layer.params) * smallest.tensor_parallel;
    }
  }
}

const SizedProfile& PlanInputs::sized(const ParallelDegrees& degrees) const {
  for (const auto& [known, sized] : sized_) {
    if (known == degrees) return *sized;
  }
  sized_.emplace_back(degrees, std::make_unique<SizedProfile>(shardProfile(profile_, degrees, source_),
                                                              target_.fit_tolerance, source_));
  return *sized_.back().second;
}

const std::vector<int>& PlanInputs::microbatchSizes(const ParallelDegrees& degrees) const {
  return sized(degrees).measuredSizes();
}

Profile PlanInputs::shardAt(const ParallelDegrees& degrees, int size) const { return sized(degrees).at(size); }

const char* layoutProblemName(LayoutProblem::Kind kind) {
  switch (kind) {
    case LayoutProblem::Kind::kMemory:
      return "memory";
    case LayoutProblem::Kind::kDivisibility:
      return "divisibility";
    case LayoutProblem::Kind::kFramework:
      return "framework rule";
    case LayoutProblem::Kind::kProfile:
      return "not profiled";
  }
  return "divisibility";
}

namespace {

LayoutProblem layoutIssue(LayoutProblem::Kind kind, std::string reason) { return LayoutProblem{kind, std::move(reason)}; }

// A schedule the framework does not run (frameworkSchedules), or chunks it cannot place.
std::optional<LayoutProblem> frameworkProblem(const ParallelLayout& layout, Framework framework) {
  const ScheduleKind schedule = layout.schedule;
  const char* name = frameworkName(framework);
  const std::vector<ScheduleKind> runs = frameworkSchedules(framework);
  if (std::find(runs.begin(), runs.end(), schedule) == runs.end()) {
    std::string listed;
    for (ScheduleKind kind : runs) listed += (listed.empty() ? "" : ", ") + std::string(scheduleName(kind));
    return layoutIssue(LayoutProblem::Kind::kFramework,
                       std::string(name) + " runs " + listed + ", not " + scheduleName(schedule));
  }
  if (layout.placement.chunked() && layout.placement.ranks < 2) {
    return layoutIssue(LayoutProblem::Kind::kFramework, std::string(name) + " runs chunks only on 2 or more pipeline ranks");
  }
  if (!runsPlacement(schedule, layout.placement) && layout.placement.chunked()) {
    return layoutIssue(LayoutProblem::Kind::kFramework, std::string(scheduleName(schedule)) + " does not run " +
                                                        placementWords(layout.placement));
  }
  return std::nullopt;
}

bool degreesMeasured(const PlanInputs& inputs, const ParallelDegrees& degrees) {
  return std::find(inputs.degrees().begin(), inputs.degrees().end(), degrees) != inputs.degrees().end();
}

}  // namespace

std::optional<LayoutProblem> layoutProblem(const PlanInputs& inputs, const ParallelLayout& layout) {
  const Cluster& cluster = inputs.cluster();
  const PlanTarget& target = inputs.target();
  if (layout.gpus() != cluster.gpus) {
    return layoutIssue(LayoutProblem::Kind::kDivisibility, "TP x CP x PP x DP = " + std::to_string(layout.gpus()) +
                                                           ", not the " + std::to_string(cluster.gpus) + " GPUs");
  }
  if (layout.globalBatch() != target.global_batch) {
    return layoutIssue(LayoutProblem::Kind::kDivisibility,
                   "the global batch " + std::to_string(target.global_batch) + " is not a multiple of microbatch " +
                       std::to_string(layout.microbatch_size) + " x DP " + std::to_string(layout.data_parallel));
  }
  if (!degreesMeasured(inputs, layout.degrees)) {
    return layoutIssue(LayoutProblem::Kind::kProfile, degreesText(layout.degrees) + " was not profiled");
  }
  if (const auto rule = frameworkProblem(layout, target.framework)) return rule;
  const std::string count = microbatchCountProblem(layout.schedule, layout.placement.ranks, layout.microbatches);
  if (!count.empty()) return layoutIssue(LayoutProblem::Kind::kDivisibility, std::string(scheduleName(layout.schedule)) + " " + count);
  if (static_cast<std::size_t>(layout.placement.chunkCount()) > inputs.profile().layerCount()) {
    return layoutIssue(LayoutProblem::Kind::kDivisibility, placementWords(layout.placement) + " need more layers than the " +
                                                           std::to_string(inputs.profile().layerCount()));
  }
  if (!groupInNode(cluster, 1, layout.degrees.tensor_parallel)) {
    return layoutIssue(LayoutProblem::Kind::kFramework, "TP " + std::to_string(layout.degrees.tensor_parallel) +
                                                        " would cross nodes of " + std::to_string(cluster.gpus_per_node));
  }
  if (!groupInNode(cluster, layout.degrees.tensor_parallel, layout.degrees.context_parallel)) {
    return layoutIssue(LayoutProblem::Kind::kFramework, "CP " + std::to_string(layout.degrees.context_parallel) +
                                                        " would cross nodes with TP " +
                                                        std::to_string(layout.degrees.tensor_parallel));
  }
  return std::nullopt;
}

namespace {

// The shard at the layout's size with its TP collectives and CP exchange priced on the links
// their groups take (Megatron's order: TP innermost, then CP).
Profile pricedShard(const PlanInputs& inputs, const ParallelLayout& layout) {
  Profile shard = inputs.shardAt(layout.degrees, layout.microbatch_size);
  const Cluster& cluster = inputs.cluster();
  const int tp = layout.degrees.tensor_parallel;
  const BoundaryLink& tp_link = groupLink(cluster, 1, tp);
  priceTensorParallelComm(shard, TensorParallelLink{tp_link.bandwidth_bytes_per_s, tp_link.latency_ms});
  priceContextParallelExchange(shard, groupLink(cluster, tp, layout.degrees.context_parallel));
  return shard;
}

// What a rank holds of the model's state: Megatron's distributed optimizer shards the optimizer
// state over DP x CP; FSDP2 shards weights, gradients and state over DP x CP (torchtitan's
// dp_shard and cp form one mesh). The ring cost of a sharded reduce-scatter is half an
// all-reduce's (one pass of the ring instead of two): its link is taken at twice the bandwidth
// and half the latency, so the one all-reduce formula charges it.
void applyDataParallel(const PlanInputs& inputs, const ParallelLayout& layout, PartitionOptions* options) {
  const OptimizerMemory optimizer = optimizerMemory(inputs.target().optimizer);
  options->bytes_per_param = optimizer.bytes_per_param;
  options->optimizer_step_temporaries = optimizer.step_temporaries;
  options->data_parallel = layout.data_parallel;
  const int tp = layout.degrees.tensor_parallel, cp = layout.degrees.context_parallel;
  BoundaryLink dp_link = groupLink(inputs.cluster(), tp * cp, layout.data_parallel);
  if (layout.sharded_data_parallel) {
    const double share = 1.0 / (layout.data_parallel * cp);
    options->sharding.state = share;
    if (shardsWeights(inputs.target().framework)) options->sharding.weights = options->sharding.gradients = share;
    dp_link.bandwidth_bytes_per_s *= 2.0;
    dp_link.latency_ms /= 2.0;
  }
  options->dp_bandwidth_bytes_per_s = dp_link.bandwidth_bytes_per_s;
  options->dp_latency_ms = dp_link.latency_ms;
}

PartitionOptions layoutOptions(const PlanInputs& inputs, const ParallelLayout& layout) {
  PartitionOptions options;
  options.schedule = layout.schedule;
  options.placement = layout.placement;
  options.microbatches = layout.microbatches;
  options.recompute = layout.recompute;
  const int tp = layout.degrees.tensor_parallel, cp = layout.degrees.context_parallel;
  const BoundaryLink& pp_link = groupLink(inputs.cluster(), tp * cp * layout.data_parallel, layout.placement.ranks);
  options.bandwidth_bytes_per_s = pp_link.bandwidth_bytes_per_s;
  options.latency_ms = pp_link.latency_ms;
  options.chunk_search_nodes = kLayoutChunkSearchNodes;
  options.memory_cap_bytes = {inputs.cluster().memory_bytes};
  // The split is printed in the framework's words: Megatron's rules where its layout applies to
  // the chain (the embedding first, norm + head + loss last), the loss with the last stage else.
  const bool megatron = inputs.target().framework == Framework::kMegatron &&
                        megatronInapplicability(inputs.profile()).empty();
  options.rules = megatron ? SplitRuleSet::kMegatron : SplitRuleSet::kLossWithLast;
  applyDataParallel(inputs, layout, &options);
  return options;
}

// The TP collectives of the layers of `split`'s slowest rank, ms per step.
double tensorParallelMs(const Profile& shard, int ranks, const Partition& split, int slowest_rank, int microbatches,
                        const TensorParallelLink& link) {
  const Placement placement = split.rankPlacement();
  double ms = 0.0;
  for (std::size_t c = 0; c < split.stages.size(); ++c) {
    if (placement.rankOf(static_cast<int>(c)) != slowest_rank) continue;
    for (int i = split.stages[c].first; i <= split.stages[c].last; ++i) {
      const LayerCost& layer = shard.layers[static_cast<std::size_t>(i)];
      if (!layer.tp_collectives) continue;
      const double one = tensorParallelCollectiveMs(static_cast<double>(layer.tp_collectives->bytes), ranks, link);
      ms += (layer.tp_collectives->forward + layer.tp_collectives->backward) * one;
    }
  }
  return ms * microbatches;
}

}  // namespace

LayoutFigures evaluateLayout(const PlanInputs& inputs, const ParallelLayout& layout) {
  if (const auto found = layoutProblem(inputs, layout)) throw Error(found->reason);
  const Profile shard = pricedShard(inputs, layout);
  const PartitionOptions options = layoutOptions(inputs, layout);
  LayoutFigures figures;
  figures.layout = layout;
  ChunkedSplit search;
  figures.split = scheduleSplit(shard, options, inputs.source(), &search);
  figures.split_proven = search.exact;
  figures.split_bound_ms = search.lower_bound_ms;
  const PipelinePrediction predicted = predictPipeline(shard, figures.split, predictionOptions(options), inputs.source());
  figures.step_ms = predicted.simulated.step_ms;
  figures.bubble = predicted.simulated.bubble;
  figures.data_parallel_ms = predicted.exposedAllReduceMs();
  int slowest = 0;
  for (std::size_t r = 0; r < predicted.simulated.ranks.size(); ++r) {
    if (predicted.simulated.ranks[r].busy_ms > figures.compute_ms) {
      figures.compute_ms = predicted.simulated.ranks[r].busy_ms;
      slowest = static_cast<int>(r);
    }
  }
  const BoundaryLink& tp_link = groupLink(inputs.cluster(), 1, layout.degrees.tensor_parallel);
  figures.tensor_parallel_ms = tensorParallelMs(inputs.shardAt(layout.degrees, layout.microbatch_size),
                                                layout.degrees.tensor_parallel, figures.split, slowest, layout.microbatches,
                                                TensorParallelLink{tp_link.bandwidth_bytes_per_s, tp_link.latency_ms});
  for (const RankMemory& rank : predicted.memory.ranks) {
    figures.peak_bytes.push_back(rank.peak_bytes);
    figures.fullest_bytes = std::max(figures.fullest_bytes, rank.peak_bytes);
  }
  if (figures.fullest_bytes > static_cast<double>(inputs.cluster().memory_bytes)) {
    throw Error("needs " + formatBytes(static_cast<std::uint64_t>(figures.fullest_bytes)) + " on its fullest rank, over the " +
                formatBytes(inputs.cluster().memory_bytes) + " of a GPU");
  }
  const double tokens = static_cast<double>(layout.globalBatch()) * inputs.profile().run.seq_len;
  figures.tokens_per_s_per_gpu = tokens / (figures.step_ms / 1000.0) / static_cast<double>(inputs.cluster().gpus);
  if (inputs.onClusterGpu() && inputs.cluster().peak_bf16_flops > 0) {
    figures.mfu = 6.0 * inputs.modelParams() * figures.tokens_per_s_per_gpu / inputs.cluster().peak_bf16_flops;
  }
  return figures;
}

double stepLowerBoundMs(const PlanInputs& inputs, const ParallelLayout& layout) {
  const Profile shard = pricedShard(inputs, layout);
  double per_microbatch = 0.0;
  for (const LayerCost& layer : shard.layers) per_microbatch += layer.forward_ms.median + layer.backward_ms.median;
  return per_microbatch * layout.microbatches / layout.placement.ranks;
}

}  // namespace stagecut
