#include <algorithm>
#include <cmath>

#include <catch2/catch.hpp>

#include "core/error.h"
#include "core/profile_shards.h"
#include "planner/layout_search.h"
#include "schedule/data_parallel.h"
#include "tests/test_support.h"

using stagecut::Cluster;
using stagecut::LayoutFigures;
using stagecut::LayoutPlan;
using stagecut::LayoutSearchOptions;
using stagecut::ParallelDegrees;
using stagecut::ParallelLayout;
using stagecut::PlanInputs;
using stagecut::PlanTarget;
using stagecut::Profile;

namespace {

// A chain of identical blocks with closed-form costs at every (TP, CP): a block's compute
// `block_ms` at TP 1 and CP 1 (forward a third, backward two thirds) divides by t x cp; its
// weights divide by t, its activations by t x cp. A TP shard runs 2 collectives of
// `tp_bytes` forward and 2 backward; a CP share passes its keys and values `cp - 1` times
// forward and twice that backward.
struct Blocks {
  int layers = 8;
  double block_ms = 1.0;
  std::uint64_t weight_bytes = 4096;      // per block at TP 1 (fp32: params = bytes / 4)
  std::uint64_t activation_bytes = 4096;  // per block and microbatch at TP 1, CP 1
  std::uint64_t tp_bytes = 1024;
  std::uint64_t cp_bytes = 1024;
  std::vector<int> tensor_parallel = {1, 2, 4, 8};
  std::vector<int> context_parallel = {1};
};

stagecut::ShardCosts shardOf(const Blocks& blocks, int t, int cp) {
  const Profile chain = stagecut::testing::makeProfile(blocks.layers);
  stagecut::ShardCosts shard;
  shard.degrees.tensor_parallel = t;
  shard.degrees.sequence_parallel = t > 1;
  shard.degrees.context_parallel = cp;
  shard.layers = chain.layers;
  for (stagecut::LayerCost& layer : shard.layers) {
    const double ms = blocks.block_ms / (t * cp);
    layer.kind = "TransformerBlock";
    layer.forward_ms = stagecut::TimeStatsMs::exactly(ms / 3);
    layer.backward_ms = stagecut::TimeStatsMs::exactly(2 * ms / 3);
    layer.backward_input_ms = stagecut::TimeStatsMs::exactly(ms / 3);
    layer.backward_weight_ms = stagecut::TimeStatsMs::exactly(ms / 3);
    layer.param_bytes = blocks.weight_bytes / static_cast<std::uint64_t>(t);
    layer.params = layer.param_bytes / 4;
    layer.activation_bytes = blocks.activation_bytes / static_cast<std::uint64_t>(t * cp);
    layer.output_bytes = 64;
    if (t > 1) layer.tp_collectives = stagecut::LayerCost::TensorParallelCollectives{2, 2, blocks.tp_bytes};
    if (cp > 1) layer.cp_exchange = stagecut::LayerCost::ContextParallelExchange{cp - 1, 2 * (cp - 1), blocks.cp_bytes};
  }
  return shard;
}

Profile blocksProfile(const Blocks& blocks) {
  Profile profile = stagecut::testing::makeProfile(blocks.layers);
  profile.run.microbatch_size = 1;
  profile.run.seq_len = 1024;
  profile.run.extra[stagecut::kWeightGradientTimingKey] = stagecut::kWeightGradientTimedAfterInput;
  for (int t : blocks.tensor_parallel) {
    for (int cp : blocks.context_parallel) profile.shards.push_back(shardOf(blocks, t, cp));
  }
  profile.layers = profile.shards.front().layers;
  return profile;
}

Cluster cluster(int gpus, std::uint64_t memory_bytes) {
  Cluster cluster = stagecut::clusterPreset("dgx-h100", gpus);
  cluster.memory_bytes = memory_bytes;
  return cluster;
}

PlanInputs inputs(const Blocks& blocks, int gpus, int global_batch, std::uint64_t memory_bytes) {
  PlanTarget target;
  target.global_batch = global_batch;
  target.optimizer = "adam";
  return PlanInputs(blocksProfile(blocks), "blocks.json", cluster(gpus, memory_bytes), target);
}

std::string layoutOf(const LayoutFigures& figures) {
  return stagecut::layoutText(figures.layout, stagecut::Framework::kMegatron);
}

}  // namespace

TEST_CASE("pure data parallelism wins where memory and links are free: the step is L blocks plus one reduce-scatter",
          "[planner][layouts]") {
  Blocks blocks;
  const PlanInputs plan_inputs = inputs(blocks, 8, 8, std::uint64_t{80} << 30);
  const LayoutPlan plan = stagecut::searchLayouts(plan_inputs, LayoutSearchOptions{});
  REQUIRE_FALSE(plan.ranked.empty());
  const LayoutFigures& best = plan.ranked.front();
  INFO(layoutOf(best));
  CHECK(best.layout.degrees.tensor_parallel == 1);
  CHECK(best.layout.placement.ranks == 1);
  CHECK(best.layout.data_parallel == 8);
  CHECK(best.layout.sharded_data_parallel);
  // Hand-derived: one microbatch through 8 blocks of 1 ms, then the distributed optimizer's
  // reduce-scatter of all 8 blocks' gradients over the node's ring: (D - 1) latencies and
  // (D - 1) / D of the bytes.
  const stagecut::BoundaryLink& nvlink = plan_inputs.cluster().intra_node;
  const double reduce_scatter = 7 * nvlink.latency_ms + 7.0 / 8 * 8 * 4096 / nvlink.bandwidth_bytes_per_s * 1e3;
  CHECK(best.step_ms == Approx(8.0 + reduce_scatter).epsilon(1e-9));
}

TEST_CASE("a model no GPU holds alone goes to tensor parallelism inside the node where its collectives are cheaper "
          "than the pipeline's bubble",
          "[planner][layouts]") {
  Blocks blocks;
  blocks.block_ms = 400.0;
  blocks.weight_bytes = std::uint64_t{4} << 30;  // 32 GiB of fp32 weights: 128 GiB with Adam's state
  blocks.tp_bytes = 64;
  PlanTarget target;
  target.global_batch = 16;
  target.optimizer = "adam";
  Cluster machines = cluster(16, std::uint64_t{18} << 30);
  machines.inter_node = machines.intra_node;  // the replicas' reduce-scatter as cheap across nodes
  const PlanInputs plan_inputs(blocksProfile(blocks), "blocks.json", machines, target);
  const LayoutPlan plan = stagecut::searchLayouts(plan_inputs, LayoutSearchOptions{});
  REQUIRE_FALSE(plan.ranked.empty());
  const LayoutFigures& best = plan.ranked.front();
  INFO(layoutOf(best));
  // Hand-derived. Per rank, weights and gradients are 64 GiB over its model-parallel degree k
  // and the state 64 GiB / k over the DP replicas that shard it, and the gradients' all-reduce
  // holds one more copy of its rank's largest chunk's: k = 4 (DP 4) needs 16 + 4 + 8 GiB, over
  // the 18 GiB cap; k = 8 (DP 2) 8 + 4 + 4. Among k = 8, TP 8 runs its M = 8
  // microbatches through 8 blocks of B / 8 with no bubble: 8 B and 64 x 4 collectives, then the
  // reduce-scatter of its 4 GiB of gradients over DP 2; a pipeline of 2 (DP 1, M = 16) pays a
  // bubble of at least 8 B / 64 (interleaved v = 4), 50 ms against the reduce-scatter's 6.
  CHECK(best.layout.degrees.tensor_parallel == 8);
  CHECK(best.layout.placement.ranks == 1);
  CHECK(best.layout.data_parallel == 2);
  CHECK(best.layout.sharded_data_parallel);
  const stagecut::BoundaryLink& nvlink = machines.intra_node;
  const double collective = 2 * 7 * nvlink.latency_ms + 2 * 7.0 / 8 * 64 / nvlink.bandwidth_bytes_per_s * 1e3;
  const double reduce_scatter = nvlink.latency_ms + 0.5 * 8 * (std::uint64_t{4} << 30) / 8 / nvlink.bandwidth_bytes_per_s * 1e3;
  CHECK(best.compute_ms == Approx(8 * 8 * (400.0 / 8 + 4 * collective)).epsilon(1e-9));
  CHECK(best.step_ms == Approx(best.compute_ms + reduce_scatter).epsilon(1e-9));
  CHECK(best.fullest_bytes >= 16.0 * (1 << 30));
  CHECK(best.fullest_bytes < 16.01 * (1 << 30));
  std::size_t memory_rejected = 0;
  for (const auto& rejected : plan.rejected) {
    const int k = rejected.layout.degrees.tensor_parallel * rejected.layout.placement.ranks;
    if (rejected.problem.kind == stagecut::LayoutProblem::Kind::kMemory) {
      // k = 8 without the state sharded needs 4 + 4 + 8 + 4 GiB.
      LayoutFigures shown;
      shown.layout = rejected.layout;
      INFO(layoutOf(shown) << ": " << rejected.problem.reason);
      CHECK((k < 8 || !rejected.layout.sharded_data_parallel));
      ++memory_rejected;
    }
  }
  CHECK(memory_rejected > 0);
}

TEST_CASE("long sequences go to context parallelism where tensor parallelism pays collectives and the pipeline a bubble",
          "[planner][layouts]") {
  Blocks blocks;
  blocks.block_ms = 100.0;
  blocks.context_parallel = {1, 2};
  blocks.tensor_parallel = {1, 2};
  blocks.activation_bytes = std::uint64_t{6} << 30;  // a microbatch's 8 blocks keep 48 GiB
  blocks.tp_bytes = std::uint64_t{64} << 20;         // TP's collectives: 64 MiB a block
  const PlanInputs plan_inputs = inputs(blocks, 64, 64, std::uint64_t{40} << 30);
  const LayoutPlan plan = stagecut::searchLayouts(plan_inputs, LayoutSearchOptions{});
  REQUIRE_FALSE(plan.ranked.empty());
  const LayoutFigures& best = plan.ranked.front();
  INFO(layoutOf(best));
  // Hand-derived. CP 2 halves each block's activations (24 GiB for a microbatch in flight) and
  // hides its 1 KiB exchange behind its compute: DP 32 runs M = 2 microbatches of 8 blocks of
  // B / 2, 8 B. TP 2 holds as little but pays 4 collectives of 64 MiB a block. Without either,
  // 48 GiB do not fit: recomputation costs a third more forward (DP 64: 8 B x 4 / 3), and a
  // pipeline of 2 keeps 2 microbatches on its first rank or pays (M + 1) stages of 4 blocks.
  CHECK(best.layout.degrees.context_parallel == 2);
  CHECK(best.layout.degrees.tensor_parallel == 1);
  CHECK(best.layout.placement.ranks == 1);
  CHECK(best.layout.data_parallel == 32);
  CHECK(best.layout.recompute.mode == stagecut::RecomputePolicy::Mode::kNone);
  CHECK(best.compute_ms == Approx(2 * 8 * 50.0).epsilon(1e-9));
}

TEST_CASE("the search's ranking equals pricing every candidate: the bound prunes nothing faster",
          "[planner][layouts][exhaustive]") {
  for (const int gpus : {4, 8, 16}) {
    Blocks blocks;
    blocks.layers = 10;
    blocks.context_parallel = {1, 2};
    blocks.tensor_parallel = {1, 2, 4};
    blocks.weight_bytes = std::uint64_t{256} << 20;
    blocks.activation_bytes = std::uint64_t{512} << 20;
    blocks.tp_bytes = std::uint64_t{4} << 20;
    blocks.cp_bytes = std::uint64_t{8} << 20;
    const PlanInputs plan_inputs = inputs(blocks, gpus, 2 * gpus, std::uint64_t{12} << 30);
    LayoutSearchOptions options;
    options.most_chunks = 3;
    const LayoutPlan plan = stagecut::searchLayouts(plan_inputs, options);
    std::vector<double> every;
    for (const ParallelLayout& layout : stagecut::candidateLayouts(plan_inputs, options)) {
      const auto outcome = stagecut::tryLayout(plan_inputs, layout, false);
      if (const auto* figures = std::get_if<LayoutFigures>(&outcome)) every.push_back(figures->step_ms);
    }
    std::sort(every.begin(), every.end());
    INFO("G = " << gpus << ": " << every.size() << " layouts run, the search priced " << plan.evaluated << " of "
                << plan.candidates);
    REQUIRE(every.size() >= options.keep);
    REQUIRE(plan.ranked.size() == options.keep);
    for (std::size_t i = 0; i < options.keep; ++i) CHECK(plan.ranked[i].step_ms == Approx(every[i]).epsilon(1e-12));
    CHECK(plan.pruned > 0);
  }
}

TEST_CASE("a pinned layout is priced by the same evaluator the search uses", "[planner][layouts]") {
  Blocks blocks;
  const PlanInputs plan_inputs = inputs(blocks, 8, 16, std::uint64_t{80} << 30);
  LayoutSearchOptions pinned;
  pinned.pin = stagecut::parseLayoutPin("tp=2,pp=2,v=2,mbs=1", plan_inputs.profile());
  const LayoutPlan plan = stagecut::searchLayouts(plan_inputs, pinned);
  REQUIRE_FALSE(plan.ranked.empty());
  for (const LayoutFigures& figures : plan.ranked) {
    CHECK(figures.layout.degrees.tensor_parallel == 2);
    CHECK(figures.layout.placement == stagecut::Placement::loop(2, 2));
    CHECK(figures.layout.data_parallel == 2);
    CHECK(stagecut::evaluateLayout(plan_inputs, figures.layout).step_ms == Approx(figures.step_ms).epsilon(1e-12));
  }
  CHECK_THROWS_WITH(stagecut::parseLayoutPin("tp=2,tq=4", plan_inputs.profile()),
                    "--fix: unknown key 'tq', did you mean 'tp'?; give e.g. --fix tp=4,cp=2,pp=4,v=5,mbs=1");
  CHECK_THROWS_WITH(stagecut::parseLayoutPin("tp=0", plan_inputs.profile()),
                    "--fix tp=0: give a whole number from 1 up, e.g. tp=2");
  CHECK_THROWS_WITH(stagecut::parseLayoutPin("pp=2,pp=4", plan_inputs.profile()),
                    "--fix: pp is given twice; give each key once");
}
