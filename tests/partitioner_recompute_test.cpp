// Recomputation modes and the data-parallel all-reduce term of the cost model, on stages of
// known layers worked out by hand.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "core/error.h"
#include "partitioner/cost_model.h"
#include "partitioner/exact_solver.h"
#include "partitioner/partition_options.h"
#include "partitioner/partition_summary.h"
#include "schedule/data_parallel.h"
#include "tests/test_support.h"

using stagecut::ChainCosts;
using stagecut::CostModel;
using stagecut::RecomputeOption;
using stagecut::RecomputePolicy;

namespace {

// Three layers: state 1, 2, 3 bytes; activations 10, 20, 30; inputs 5, 6, 7; compute 1, 2, 3 ms.
ChainCosts threeLayers() {
  ChainCosts costs;
  costs.compute_ms = {1, 2, 3};
  costs.state_bytes = {1, 2, 3};
  costs.activation_bytes = {10, 20, 30};
  costs.input_bytes = {5, 6, 7};
  costs.stage_speed = {1};
  costs.in_flight = {4};
  return costs;
}

RecomputeOption option(const std::string& name, std::vector<char> recomputed) {
  std::vector<double> extra;
  for (std::size_t k = 0; k < recomputed.size(); ++k) extra.push_back(recomputed[k] ? 0.5 * (k + 1) : 0.0);
  return {name, std::move(recomputed), std::move(extra)};
}

}  // namespace

TEST_CASE("recompute memory: each run of recomputed layers keeps its input, the rest keep "
          "their activations, plus the largest recomputed layer's while it reruns",
          "[partitioner][recompute]") {
  ChainCosts costs = threeLayers();
  costs.recompute_options = {option("none", {0, 0, 0}), option("full", {1, 1, 1}),
                             option("tail", {0, 1, 1}), option("ends", {1, 0, 1})};
  const CostModel model(costs);
  // state 6 + 4 in flight x (kept activations + run inputs) + largest recomputed activations
  CHECK(model.optionMemoryBytes(0, 0, 0, 2) == 6 + 4 * 60);
  CHECK(model.optionMemoryBytes(1, 0, 0, 2) == 6 + 4 * 5 + 30);
  CHECK(model.optionMemoryBytes(2, 0, 0, 2) == 6 + 4 * (10 + 6) + 30);
  CHECK(model.optionMemoryBytes(3, 0, 0, 2) == 6 + 4 * (20 + 5 + 7) + 30);
  // A stage starting inside a run keeps its own input: layers 1..2 under "full".
  CHECK(model.optionMemoryBytes(1, 0, 1, 2) == 5 + 4 * 6 + 30);
  // Extra forward: 0.5, 1.0, 1.5 ms on the recomputed layers.
  CHECK(model.recomputeExtraMs(1, 0, 2) == Approx(3.0));
  CHECK(model.recomputeExtraMs(2, 0, 2) == Approx(2.5));
  CHECK(model.optionCostMs(3, 0, 0, 2) == Approx(6 + 0.5 + 1.5));
  // Without a cap every stage takes the cheapest option: none.
  CHECK(model.recomputeChoice(0, 0, 2) == 0);
  CHECK(model.stageCostMs(0, 0, 2) == 6.0);
}

TEST_CASE("recompute auto: the cheapest option that fits, per stage", "[partitioner][recompute]") {
  ChainCosts costs = threeLayers();
  costs.recompute_options = {option("none", {0, 0, 0}), option("tail", {0, 1, 1}),
                             option("full", {1, 1, 1})};
  costs.memory_cap_bytes = {120};
  const CostModel model(costs);
  CHECK(model.recomputeChoice(0, 0, 2) == 1);  // none 246 > 120; tail 100 fits; +2.5 ms
  CHECK(model.recomputeName(1) == "tail");
  CHECK(model.stageCostMs(0, 0, 2) == Approx(8.5));
  CHECK(model.memoryBytes(0, 0, 2) == 100);
  ChainCosts tight = costs;
  tight.memory_cap_bytes = {60};
  CHECK(CostModel(tight).recomputeChoice(0, 0, 2) == 2);  // only full (56) fits
  tight.memory_cap_bytes = {50};
  CHECK(CostModel(tight).recomputeChoice(0, 0, 2) == -1);
  CHECK(CostModel(tight).memoryBytes(0, 0, 2) == 56);  // the least any option needs
}

TEST_CASE("recompute auto recomputes only the stages whose cap needs it",
          "[partitioner][recompute]") {
  // Four equal layers over two stages (1F1B: 2 and 1 microbatches in flight): stage 0 keeps
  // 2 x 20 activations + 2 state = 42 > 30, so it recomputes (2 x 5 input + 10 + 2 = 22);
  // stage 1 keeps 1 x 20 + 2 = 22 and does not.
  ChainCosts costs;
  costs.compute_ms = {3, 3, 3, 3};
  costs.state_bytes = {1, 1, 1, 1};
  costs.activation_bytes = {10, 10, 10, 10};
  costs.input_bytes = {5, 5, 5, 5};
  costs.stage_speed = {1, 1};
  costs.in_flight = {2, 1};
  costs.memory_cap_bytes = {30, 30};
  costs.recompute_options = {option("none", {0, 0, 0, 0}), option("full", {1, 1, 1, 1})};
  const CostModel model(costs);
  const std::vector<int> split = stagecut::solveExactSplit(model);
  // 2|2 costs 6 + 1.5 (recompute 0.5 + 1.0) = 7.5 | 6; 1|3 costs 3 | 13.5 (three layers keep
  // 33 > 30, so full: 9 + 1.0 + 1.5 + 2.0); 3|1 costs 12 (full) | 3. So 2|2.
  CHECK(split == std::vector<int>{2, 2});
  const auto stages = stagecut::describeRecompute(model, split);
  REQUIRE(stages.size() == 2);
  CHECK(stages[0].mode == "full");
  CHECK(stages[0].extra_ms == Approx(1.5));
  CHECK(stages[0].memory_bytes_without == 42);
  CHECK(stages[0].memory_bytes_with == 22);
  CHECK(stages[1].mode == "none");
  CHECK(stages[1].extra_ms == 0.0);
}

TEST_CASE("parsing --recompute specs: modes, selective kinds, and errors that name the fix",
          "[partitioner][recompute]") {
  stagecut::Profile profile = stagecut::testing::makeProfile(4);
  profile.layers[0].kind = "Embedding";
  profile.layers[2].kind = "Attention";
  CHECK(stagecut::parseRecomputePolicy("none", profile).mode == RecomputePolicy::Mode::kNone);
  CHECK(stagecut::parseRecomputePolicy("full", profile).mode == RecomputePolicy::Mode::kFull);
  CHECK(stagecut::parseRecomputePolicy("auto", profile).mode == RecomputePolicy::Mode::kAuto);
  const RecomputePolicy selective = stagecut::parseRecomputePolicy("selective:Attention+Linear", profile);
  CHECK(selective.mode == RecomputePolicy::Mode::kSelective);
  CHECK(selective.kinds == std::vector<std::string>{"Attention", "Linear"});
  CHECK(selective.text() == "selective:Attention+Linear");
  CHECK(stagecut::parseRecomputePolicy("selective:Attention,Linear", profile).kinds.size() == 2);
  CHECK_THROWS_WITH(stagecut::parseRecomputePolicy("selective:Atention", profile),
                    "--recompute selective:Atention: the profile has no layer of kind 'Atention', "
                    "did you mean 'Attention'?");
  CHECK_THROWS_WITH(stagecut::parseRecomputePolicy("ful", profile),
                    "--recompute ful: unknown mode 'ful', did you mean 'full'? (selective takes "
                    "layer kinds: selective:Attention)");
  CHECK_THROWS_WITH(stagecut::parseRecomputePolicy("selective:", profile),
                    Catch::StartsWith("--recompute selective:: an empty layer kind"));

  // Extra forwards are recomputeMedianMs(): the measured recompute_ms where present.
  profile.layers[2].recompute_ms = stagecut::TimeStatsMs::exactly(9.0);
  const auto options = stagecut::recomputeOptions(profile, selective);
  REQUIRE(options.size() == 1);
  CHECK(options[0].recomputed == std::vector<char>{0, 1, 1, 1});
  CHECK(options[0].extra_ms[2] == 9.0);
  CHECK(options[0].extra_ms[1] == profile.layers[1].forward_ms.median);
  CHECK(options[0].extra_ms[0] == 0.0);
  const auto both = stagecut::recomputeOptions(profile, stagecut::parseRecomputePolicy("auto", profile));
  REQUIRE(both.size() == 2);
  CHECK(both[0].name == "none");
  CHECK(both[1].name == "full");
  const RecomputePolicy choice = stagecut::parseRecomputePolicy("auto:Attention", profile);
  CHECK(choice.mode == RecomputePolicy::Mode::kAuto);
  CHECK(choice.text() == "auto:Attention");
  const auto three = stagecut::recomputeOptions(profile, choice);
  REQUIRE(three.size() == 3);
  CHECK(three[0].name == "none");
  CHECK(three[1].name == "selective:Attention");
  CHECK(three[1].recomputed == std::vector<char>{0, 0, 1, 0});
  CHECK(three[2].name == "full");
  CHECK_THROWS_WITH(stagecut::parseRecomputePolicy("auto:Atention", profile),
                    "--recompute auto:Atention: the profile has no layer of kind 'Atention', "
                    "did you mean 'Attention'?");
}

TEST_CASE("data parallel: a stage pays the all-reduce its successors' cool-down cannot hide",
          "[partitioner][data-parallel]") {
  stagecut::Profile profile = stagecut::testing::makeProfile(4);
  for (auto& layer : profile.layers) {
    layer.forward_ms = stagecut::TimeStatsMs::exactly(1.0);
    layer.backward_ms = stagecut::TimeStatsMs::exactly(2.0);
    layer.param_bytes = 0;
  }
  profile.layers[0].param_bytes = 4000000000;  // an embedding: 4 GB of gradients
  stagecut::PartitionOptions options;
  options.placement = stagecut::Placement::loop(2, 1);
  options.microbatches = 4;
  options.data_parallel = 4;
  options.dp_bandwidth_bytes_per_s = 100e9;
  options.dp_latency_ms = 0.01;
  const CostModel model = stagecut::buildCostModel(profile, options, "test");
  const stagecut::BoundaryLink link{100e9, 0.01};
  // 2 x 3/4 x 4 GB / 100 GB/s = 60 ms + 6 x 10 us.
  CHECK(model.allReduceMs(0, 0) == Approx(stagecut::ringAllReduceMs(4000000000, 4, link)));
  CHECK(model.allReduceMs(0, 0) == Approx(60.06));
  // Stage 0 finishes last: nothing hides its all-reduce; spread over M + N - 1 = 5 slots.
  CHECK(model.exposedAllReduceMs(0, 0, 1) == Approx(60.06));
  CHECK(model.stageCostMs(0, 0, 1) == Approx(6 + 60.06 / 5));
  // Stage 1's (latency only, 0.06 ms) hides behind stage 0's last backward.
  CHECK(model.exposedAllReduceMs(1, 2, 3) == 0.0);
  CHECK(model.stageCostMs(1, 2, 3) == Approx(6.0));
  // So the embedding's stage takes fewer layers than the plain 2|2: 1|3 costs 3 + 12.0 | 9.
  const std::vector<int> split = stagecut::solveExactSplit(model);
  CHECK(split == std::vector<int>{1, 3});
  options.data_parallel = 1;
  CHECK(stagecut::solveExactSplit(stagecut::buildCostModel(profile, options, "test")) ==
        std::vector<int>{2, 2});
  options.data_parallel = 0;
  CHECK_THROWS_WITH(stagecut::buildCostModel(profile, options, "test"),
                    "--data-parallel 0: each stage needs at least 1 replica; use --data-parallel 1 "
                    "for a plain pipeline");
}
