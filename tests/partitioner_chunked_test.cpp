#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <random>

#include <catch2/catch.hpp>

#include "core/error.h"
#include "partitioner/chunked_partition.h"
#include "partitioner/partition_options.h"
#include "prediction/pipeline_prediction.h"
#include "test_support.h"

using stagecut::Partition;
using stagecut::PartitionOptions;
using stagecut::Placement;
using stagecut::Profile;

namespace {

Profile randomChain(std::mt19937& random, int layers, bool loss_last) {
  Profile profile = stagecut::testing::makeProfile(layers);
  std::uniform_real_distribution<double> ms(0.1, 5.0);
  std::uniform_int_distribution<int> size(1, 64);
  for (auto& layer : profile.layers) {
    layer.forward_ms = stagecut::TimeStatsMs::exactly(ms(random));
    layer.backward_ms = stagecut::TimeStatsMs::exactly(2 * ms(random));
    layer.backward_input_ms.reset();
    layer.backward_weight_ms.reset();
    layer.params = 1000u * static_cast<unsigned>(size(random));
    layer.param_bytes = 4 * layer.params;
    layer.activation_bytes = 4096u * static_cast<unsigned>(size(random));
    layer.output_bytes = 1024u * static_cast<unsigned>(size(random));
  }
  if (loss_last) {
    profile.layers.back().name = "loss";
    profile.layers.back().kind = "CrossEntropyLoss";
  }
  return profile;
}

struct Best {
  double slowest = std::numeric_limits<double>::infinity();
  double largest = std::numeric_limits<double>::infinity();
  bool found = false;
};

// Every chunking of the chain into N x v non-empty chunks, priced by hand: a chunk costs its
// layers' forward + backward (+ the forward again under --recompute full) and a message each way
// at each end whose neighbour runs on another rank, over its rank's speed; a rank's memory is the
// prediction path's peak for that chunking, every chunk recomputing as the options say.
Best bruteForce(const Profile& profile, const PartitionOptions& options) {
  // Written out, not options.placement: the oracle places chunks by the schedule's own rule.
  const bool v_shape = options.schedule == stagecut::ScheduleKind::kZeroBubbleV;
  const int ranks = options.placement.ranks;
  const Placement placement =
      v_shape ? Placement{ranks, 2, Placement::Style::kV} : Placement::loop(ranks, options.placement.chunks_per_rank);
  const int layers = static_cast<int>(profile.layerCount());
  const std::vector<char> cut_allowed = stagecut::resolvedSplitRules(profile, options).cut_allowed;
  const stagecut::BoundaryLink link{options.bandwidth_bytes_per_s, options.latency_ms};
  Best best;
  std::vector<int> counts;
  const std::function<void(int)> extend = [&](int left) {
    const int chunk = static_cast<int>(counts.size());
    if (chunk == placement.chunkCount()) {
      if (left != 0) return;
      std::vector<double> load(static_cast<std::size_t>(placement.ranks), 0.0);
      double largest = 0.0;
      int first = 0;
      Partition partition = stagecut::testing::makePartition(counts);
      partition.placement = placement;
      const bool recomputes = options.recompute.mode == stagecut::RecomputePolicy::Mode::kFull;
      for (auto& stage : partition.stages) {
        if (recomputes) stage.recompute = "full";
      }
      for (int c = 0; c < chunk; ++c) {
        const int last = first + counts[static_cast<std::size_t>(c)] - 1;
        if (last + 1 < layers && !cut_allowed.empty() && !cut_allowed[static_cast<std::size_t>(last)]) return;
        double cost = 0.0;
        for (int k = first; k <= last; ++k) {
          cost += profile.layers[k].forward_ms.median * (recomputes ? 2 : 1) + profile.layers[k].backward_ms.median;
        }
        const int rank = placement.rankOf(c);
        if (!link.isFree()) {
          if (first > 0 && placement.rankOf(c - 1) != rank) cost += 2 * link.transferMs(profile.layers[first - 1].output_bytes);
          if (last + 1 < layers && placement.rankOf(c + 1) != rank) {
            cost += 2 * link.transferMs(profile.layers[last].output_bytes);
          }
        }
        cost /= options.stage_speed.empty() ? 1.0 : options.stage_speed[static_cast<std::size_t>(rank)];
        load[static_cast<std::size_t>(rank)] += cost;
        largest = std::max(largest, cost);
        first = last + 1;
      }
      if (!options.memory_cap_bytes.empty()) {
        const stagecut::PipelinePrediction predicted =
            stagecut::predictPipeline(profile, partition, stagecut::predictionOptions(options), "brute");
        for (const auto& rank : predicted.memory.ranks) {
          if (rank.peak_bytes > static_cast<double>(options.memory_cap_bytes[0])) return;
        }
      }
      const double slowest = *std::max_element(load.begin(), load.end());
      const double tolerance = 1e-9 * slowest;
      if (!best.found || slowest < best.slowest - tolerance ||
          (std::abs(slowest - best.slowest) <= tolerance && largest < best.largest - tolerance)) {
        best = Best{slowest, largest, true};
      }
      return;
    }
    for (int count = 1; count <= left - (placement.chunkCount() - chunk - 1); ++count) {
      counts.push_back(count);
      extend(left - count);
      counts.pop_back();
    }
  };
  extend(layers);
  return best;
}

// A chain of an embedding, `blocks` equal blocks, a head and optionally a loss, in blocks' time
// (forward a third, backward two thirds; no B/W split).
Profile chainOfBlocks(double embedding, int blocks, double head, std::optional<double> loss) {
  std::vector<double> ms{embedding};
  ms.insert(ms.end(), static_cast<std::size_t>(blocks), 1.0);
  ms.push_back(head);
  if (loss) ms.push_back(*loss);
  Profile profile = stagecut::testing::makeProfile(static_cast<int>(ms.size()));
  for (std::size_t i = 0; i < ms.size(); ++i) {
    profile.layers[i].forward_ms = stagecut::TimeStatsMs::exactly(ms[i] / 3);
    profile.layers[i].backward_ms = stagecut::TimeStatsMs::exactly(2 * ms[i] / 3);
    profile.layers[i].backward_input_ms.reset();
    profile.layers[i].backward_weight_ms.reset();
  }
  return profile;
}

PartitionOptions interleaved(int stages, int chunks, int microbatches) {
  PartitionOptions options;
  options.placement = stagecut::Placement::loop(stages, chunks);
  options.microbatches = microbatches;
  options.schedule = stagecut::ScheduleKind::kInterleavedOneFOneB;
  options.rules = stagecut::SplitRuleSet::kAny;
  return options;
}

}  // namespace

TEST_CASE("the chunked split is the best of every chunking, under links, speeds, rules and memory caps",
          "[partitioner][chunks]") {
  std::mt19937 random(20261205);
  int compared = 0, capped = 0, infeasible = 0, v_shaped = 0, recomputed = 0, replicated = 0;
  for (int trial = 0; trial < 200; ++trial) {
    PartitionOptions options;
    // Every fourth trial a V (ZB-V: 2 chunks, rank r holding r and 2N - 1 - r, any M).
    const bool v_shape = trial % 4 == 2;
    options.schedule = v_shape ? stagecut::ScheduleKind::kZeroBubbleV : stagecut::ScheduleKind::kInterleavedOneFOneB;
    const int ranks = std::uniform_int_distribution<int>(1, 3)(random);
    options.placement = v_shape ? Placement{ranks, 2, Placement::Style::kV}
                                : Placement::loop(ranks, std::uniform_int_distribution<int>(2, 3)(random));
    const int layers = std::uniform_int_distribution<int>(options.placement.chunkCount(), 10)(random);
    const bool loss_last = trial % 2 == 0;
    const Profile profile = randomChain(random, layers, loss_last);
    options.microbatches = v_shape ? std::uniform_int_distribution<int>(1, 7)(random)
                                   : options.placement.ranks * std::uniform_int_distribution<int>(1, 3)(random);
    options.rules = loss_last ? stagecut::SplitRuleSet::kLossWithLast : stagecut::SplitRuleSet::kAny;
    if (trial % 3 == 0) {
      options.bandwidth_bytes_per_s = 1e7;
      options.latency_ms = 0.05;
    }
    if (trial % 4 == 1) {
      for (int r = 0; r < options.placement.ranks; ++r) options.stage_speed.push_back(r % 2 ? 0.5 : 1.0);
    }
    // Recomputation changes each chunk's cost and memory; replicas add the all-reduce to every
    // rank's timeline (and its transient to the peak), never to a rank's load.
    if (trial % 7 == 5) options.recompute.mode = stagecut::RecomputePolicy::Mode::kFull;
    if (trial % 6 == 4) {
      options.data_parallel = 2;
      options.dp_bandwidth_bytes_per_s = 1e9;
      options.dp_latency_ms = 0.01;
    }
    if (trial % 5 >= 3 && bruteForce(profile, options).found) {
      // A cap between the lightest and the heaviest rank of the free optimum binds some of the time.
      const Partition free = stagecut::partitionChunked(profile, options, "chain");
      std::uint64_t lightest = ~std::uint64_t{0}, heaviest = 0;
      for (const auto& stage : free.stages) {
        lightest = std::min(lightest, stage.memory_bytes);
        heaviest = std::max(heaviest, stage.memory_bytes);
      }
      options.memory_cap_bytes = {(lightest + heaviest) / 2};
    }
    INFO("trial " << trial << ": N " << options.placement.ranks << ", v " << options.placement.chunks_per_rank << ", L " << layers);
    const Best best = bruteForce(profile, options);
    if (!best.found) {
      CHECK_THROWS_AS(stagecut::partitionChunked(profile, options, "chain"), stagecut::Error);
      ++infeasible;
      continue;
    }
    stagecut::ChunkedSplit search;
    const Partition split = stagecut::partitionChunked(profile, options, "chain", &search);
    CHECK(search.exact);
    CHECK(split.bottleneck_ms == Approx(best.slowest).epsilon(1e-9));
    CHECK(search.largest_chunk_ms == Approx(best.largest).epsilon(1e-9));
    CHECK(split.stages.size() == static_cast<std::size_t>(options.placement.chunkCount()));
    CHECK(split.placement->style == (v_shape ? Placement::Style::kV : Placement::Style::kLoop));
    CHECK(split.lower_bound_ms <= split.bottleneck_ms * (1 + 1e-12));
    for (const auto& stage : split.stages) {
      if (!options.memory_cap_bytes.empty()) CHECK(stage.memory_bytes <= options.memory_cap_bytes[0] + 1);
    }
    ++compared;
    if (!options.memory_cap_bytes.empty()) ++capped;
    if (v_shape) ++v_shaped;
    if (options.recompute.mode != stagecut::RecomputePolicy::Mode::kNone) {
      ++recomputed;
      for (const auto& stage : split.stages) CHECK(stage.recompute == std::optional<std::string>("full"));
    }
    if (options.data_parallel > 1) {
      ++replicated;
      for (const auto& stage : split.stages) CHECK(stage.allreduce_ms.value_or(0.0) > 0.0);
    }
  }
  CHECK(compared > 120);
  CHECK(capped > 25);
  CHECK(v_shaped > 30);
  CHECK(recomputed > 15);
  CHECK(replicated > 20);
  CHECK(infeasible + compared == 200);
}

TEST_CASE("a chunked split places chunk c on rank c mod N, and its prediction runs those chunks",
          "[partitioner][chunks]") {
  std::mt19937 random(7);
  const Profile profile = randomChain(random, 12, false);
  PartitionOptions options = interleaved(3, 2, 6);
  const Partition split = stagecut::partitionChunked(profile, options, "chain");
  REQUIRE(split.placement);
  CHECK(*split.placement == Placement::loop(3, 2));
  std::vector<double> load(3, 0.0);
  for (std::size_t c = 0; c < split.stages.size(); ++c) load[c % 3] += split.stages[c].cost_ms;
  CHECK(split.bottleneck_ms == Approx(*std::max_element(load.begin(), load.end())));
  const stagecut::PipelinePrediction predicted =
      stagecut::predictPipeline(profile, split, stagecut::predictionOptions(options), "chain");
  CHECK(split.predicted_step_ms == Approx(predicted.simulated.step_ms));
  CHECK(predicted.schedule.placement.chunks_per_rank == 2);
  // Rank r's chunks share one memory figure: the rank's peak.
  CHECK(split.stages[0].memory_bytes == split.stages[3].memory_bytes);
}

TEST_CASE("the chunked split says what it cannot do", "[partitioner][chunks]") {
  std::mt19937 random(3);
  const Profile profile = randomChain(random, 6, false);
  PartitionOptions options = interleaved(2, 4, 2);
  CHECK_THROWS_WITH(stagecut::partitionChunked(profile, options, "chain"),
                    "--chunks 4: 2 ranks x 4 chunks need 8 layers, the profile has 6; use fewer --chunks");
  options.placement.chunks_per_rank = 2;
  options.schedule = stagecut::ScheduleKind::kOneFOneB;
  CHECK_THROWS_WITH(stagecut::partitionChunked(profile, options, "chain"),
                    Catch::Matchers::Contains("1f1b runs one chunk per rank"));
  options.schedule = stagecut::ScheduleKind::kInterleavedOneFOneB;
  options.memory_cap_bytes = {1};
  CHECK_THROWS_WITH(stagecut::partitionChunked(profile, options, "chain"),
                    Catch::Matchers::Contains("a larger --memory-cap"));
}

TEST_CASE("a chunked search cut short returns its best split, not exact, with a bound below it",
          "[partitioner][chunks]") {
  std::mt19937 random(11);
  const Profile profile = randomChain(random, 24, false);
  PartitionOptions options = interleaved(3, 3, 8);
  const stagecut::CostModel model = [&] {
    PartitionOptions per_chunk = options;
    per_chunk.placement = stagecut::Placement::loop(9, 1);
    per_chunk.schedule = stagecut::ScheduleKind::kOneFOneB;
    return stagecut::buildCostModel(profile, per_chunk, "chain");
  }();
  stagecut::ChunkedProblem problem;
  problem.chunks = &model;
  problem.placement = Placement::loop(3, 3);
  problem.node_budget = 50;
  const stagecut::ChunkedSplit cut = stagecut::solveChunkedSplit(problem);
  CHECK_FALSE(cut.exact);
  CHECK(cut.layers_per_chunk.size() == 9);
  CHECK(cut.lower_bound_ms < cut.bottleneck_ms);
  problem.node_budget = 100'000'000;
  const stagecut::ChunkedSplit full = stagecut::solveChunkedSplit(problem);
  CHECK(full.exact);
  CHECK(full.bottleneck_ms <= cut.bottleneck_ms);
  CHECK(full.lower_bound_ms == Approx(full.bottleneck_ms));
}

TEST_CASE("a chunked search cut short is still exact when its slowest rank meets the packing bound",
          "[partitioner][chunks]") {
  // 16 equal blocks between a light embedding and a head heavier than a block, on 4 ranks x 2
  // chunks: the average load is 4.4 blocks, but no rank can hold 4.4 blocks, so some rank holds 5.
  const Profile profile = chainOfBlocks(0.1, 16, 1.5, {});
  const PartitionOptions options = interleaved(4, 2, 8);
  PartitionOptions per_chunk = options;
  per_chunk.placement = stagecut::Placement::loop(8, 1);
  per_chunk.schedule = stagecut::ScheduleKind::kOneFOneB;
  const stagecut::CostModel model = stagecut::buildCostModel(profile, per_chunk, "chain");
  stagecut::ChunkedProblem problem;
  problem.chunks = &model;
  problem.placement = Placement::loop(4, 2);
  problem.node_budget = 1;
  const stagecut::ChunkedSplit cut = stagecut::solveChunkedSplit(problem);
  const Best best = bruteForce(profile, options);
  REQUIRE(best.found);
  CHECK(best.slowest == Approx(5.0));
  CHECK(cut.bottleneck_ms == Approx(best.slowest));
  CHECK(cut.lower_bound_ms == Approx(best.slowest));
  CHECK(cut.exact);
  CHECK(cut.nodes > problem.node_budget);
}

TEST_CASE("among chunkings as slow, the chunked split takes the faster simulated step, here against a hand layout",
          "[partitioner][chunks]") {
  // A LLaMA-70B-shaped chain (embedding, 80 equal blocks, a head of 1.2 blocks, the loss) at
  // N = 8, v = 5, M = 32, and the layout Megatron users write for it by hand:
  // Et*2|(t*2|)*34,t*3|(t*2|)*3,tL.
  const Profile profile = chainOfBlocks(0.6, 80, 1.2, 0.1);
  const PartitionOptions options = interleaved(8, 5, 32);
  stagecut::ChunkedSplit search;
  const Partition best = stagecut::partitionChunked(profile, options, "chain", &search);
  std::vector<int> hand{3};
  for (int c = 1; c <= 34; ++c) hand.push_back(2);
  hand.push_back(3);
  for (int c = 36; c <= 38; ++c) hand.push_back(2);
  hand.push_back(3);
  const Partition by_hand = stagecut::describeChunkedSplit(profile, options, hand, "yours", "chain");
  const Partition searched = stagecut::describeChunkedSplit(profile, options, search.layers_per_chunk, "compute", "chain");
  CHECK(best.bottleneck_ms <= by_hand.bottleneck_ms * (1 + 1e-9));
  CHECK(best.bottleneck_ms <= searched.bottleneck_ms * (1 + 1e-9));
  CHECK(best.predicted_step_ms <= by_hand.predicted_step_ms * (1 + 1e-9));
  CHECK(best.predicted_step_ms <= searched.predicted_step_ms * (1 + 1e-9));
  CHECK(search.exact);
}
