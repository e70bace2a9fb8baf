#include <catch2/catch.hpp>

#include "core/error.h"
#include "schedule/generators.h"
#include "schedule/profile_costs.h"
#include "schedule/simulator.h"
#include "tests/test_support.h"

using stagecut::BoundaryLink;
using stagecut::costsFromPartition;
using stagecut::PartitionCosts;
using stagecut::testing::makePartition;
using stagecut::testing::makeProfile;

// makeProfile's layer i: forward 0.5 + i, backward 1.25 + 2i, activations 4096 (i + 1) bytes,
// 256 output bytes; odd layers also measure B = 0.5 + i and W = 0.75 + i.
TEST_CASE("stage costs are the sums of their layers' medians", "[schedule][profile-costs]") {
  const PartitionCosts costs =
      costsFromPartition(makeProfile(6), makePartition({2, 3, 1}), stagecut::Placement::loop(3, 1), {}, "part.json");
  REQUIRE(costs.stages.size() == 3);
  REQUIRE(costs.costs.stages.size() == 3);
  CHECK(costs.costs.comm_ms.empty());
  const auto& first = costs.costs.stages[0];  // layers 0 and 1
  CHECK(first.forward_ms == Approx(0.5 + 1.5));
  CHECK(first.backward_ms == Approx(1.25 + 3.25));
  // Layer 0 has no B / W of its own: its backward 1.25 splits evenly; layer 1 measured 1.5 / 1.75.
  CHECK(first.backward_input_ms == Approx(0.625 + 1.5));
  CHECK(first.backward_weight_ms == Approx(0.625 + 1.75));
  CHECK(first.activation_bytes == 4096u * (1 + 2));
  const auto& second = costs.costs.stages[1];  // layers 2, 3, 4
  CHECK(second.forward_ms == Approx(2.5 + 3.5 + 4.5));
  CHECK(second.backward_input_ms == Approx(5.25 / 2 + 3.5 + 9.25 / 2));
  CHECK(costs.layers_with_even_split == 3);  // layers 0, 2 and 4
}

TEST_CASE("in an older profile W is the backward minus B, so that B + W is the whole backward", "[schedule][profile-costs]") {
  // A transformer block timed by the profiler: B alone 6 ms, W alone 9 ms (each re-runs most of
  // the block's internal backward), the whole backward 10 ms. A one-GEMM layer: 2 + 3 = 5.
  stagecut::Profile profile = makeProfile(4);
  for (auto& layer : profile.layers) {
    layer.backward_ms = stagecut::TimeStatsMs::exactly(10.0);
    layer.backward_input_ms = stagecut::TimeStatsMs::exactly(6.0);
    layer.backward_weight_ms = stagecut::TimeStatsMs::exactly(9.0);
  }
  profile.layers[1].backward_ms = stagecut::TimeStatsMs::exactly(5.0);
  profile.layers[1].backward_input_ms = stagecut::TimeStatsMs::exactly(2.0);
  profile.layers[1].backward_weight_ms = stagecut::TimeStatsMs::exactly(3.0);
  // Noise can put B above the backward: B is capped there and W is 0, never negative.
  profile.layers[3].backward_input_ms = stagecut::TimeStatsMs::exactly(10.5);
  const PartitionCosts costs = costsFromPartition(profile, makePartition({2, 2}), stagecut::Placement::loop(2, 1), {}, "part.json");
  CHECK(costs.costs.stages[0].backward_input_ms == Approx(6.0 + 2.0));
  CHECK(costs.costs.stages[0].backward_weight_ms == Approx(4.0 + 3.0));
  CHECK(costs.costs.stages[1].backward_input_ms == Approx(6.0 + 10.0));
  CHECK(costs.costs.stages[1].backward_weight_ms == Approx(4.0 + 0.0));
  for (const auto& stage : costs.costs.stages) {
    CHECK(stage.backward_input_ms + stage.backward_weight_ms == Approx(stage.backward_ms));
  }
  CHECK(costs.layers_with_w_from_backward == 3);  // all but the one-GEMM layer (2 + 3 = 5)

  // With the same backward work, ZB-H1 fills 1F1B's bubble with W: never slower than 1F1B.
  const auto one_f_one_b = stagecut::simulate(stagecut::generateSchedule("1f1b", 2, 8), costs.costs);
  const auto zero_bubble = stagecut::simulate(stagecut::generateSchedule("zb-h1", 2, 8), costs.costs);
  CHECK(zero_bubble.step_ms <= one_f_one_b.step_ms + 1e-9);
}

TEST_CASE("B and W timed as a zero-bubble stage runs them are taken as they are", "[schedule][profile-costs]") {
  // The profiler's own B and W: B with W's starting points held back, W from there. Their sum is
  // over the whole backward by what the split costs, and zb-h1 runs exactly that work.
  stagecut::Profile profile = makeProfile(4);
  profile.run.extra[stagecut::kWeightGradientTimingKey] = stagecut::kWeightGradientTimedAfterInput;
  REQUIRE(profile.run.weightTimedAfterInput());
  for (auto& layer : profile.layers) {
    layer.backward_ms = stagecut::TimeStatsMs::exactly(10.0);
    layer.backward_input_ms = stagecut::TimeStatsMs::exactly(6.0);
    layer.backward_weight_ms = stagecut::TimeStatsMs::exactly(5.5);
  }
  profile.layers[3].backward_input_ms = stagecut::TimeStatsMs::exactly(10.5);  // over the backward: kept
  const PartitionCosts costs = costsFromPartition(profile, makePartition({2, 2}), stagecut::Placement::loop(2, 1), {}, "part.json");
  CHECK(costs.costs.stages[0].backward_input_ms == Approx(12.0));
  CHECK(costs.costs.stages[0].backward_weight_ms == Approx(11.0));
  CHECK(costs.costs.stages[1].backward_input_ms == Approx(16.5));
  CHECK(costs.costs.stages[1].backward_weight_ms == Approx(11.0));
  CHECK(costs.costs.stages[0].backward_ms == Approx(20.0));
  CHECK(costs.layers_with_w_from_backward == 0);
  // Another value of the key is not this timing: the older rule applies.
  profile.run.extra[stagecut::kWeightGradientTimingKey] = "alone";
  CHECK_FALSE(profile.run.weightTimedAfterInput());
  const PartitionCosts older = costsFromPartition(profile, makePartition({2, 2}), stagecut::Placement::loop(2, 1), {}, "part.json");
  CHECK(older.costs.stages[0].backward_weight_ms == Approx(8.0));
}

TEST_CASE("boundaries carry the output bytes over the link", "[schedule][profile-costs]") {
  BoundaryLink link;
  link.bandwidth_bytes_per_s = 256e3;  // 256 output bytes take 1 ms
  link.latency_ms = 0.5;
  CHECK(link.transferMs(256) == Approx(1.5));
  CHECK_FALSE(link.isFree());
  CHECK(BoundaryLink{}.isFree());
  const PartitionCosts costs =
      costsFromPartition(makeProfile(6), makePartition({2, 3, 1}), stagecut::Placement::loop(3, 1), link, "part.json");
  CHECK(costs.costs.comm_ms == std::vector<double>{1.5, 1.5});
}

TEST_CASE("chunked schedules divide each rank's stage evenly into its chunks",
          "[schedule][profile-costs]") {
  BoundaryLink link;
  link.latency_ms = 2;
  const PartitionCosts costs =
      costsFromPartition(makeProfile(4), makePartition({1, 3}), stagecut::Placement::loop(2, 2), link, "part.json");
  REQUIRE(costs.costs.stages.size() == 4);  // model stages: rank 0 c0, rank 1 c0, rank 0 c1, ...
  CHECK(costs.costs.stages[0].forward_ms == Approx(0.5 / 2));
  CHECK(costs.costs.stages[1].forward_ms == Approx((1.5 + 2.5 + 3.5) / 2));
  CHECK(costs.costs.stages[2].forward_ms == Approx(0.5 / 2));
  CHECK(costs.costs.stages[3].activation_bytes == 4096u * (2 + 3 + 4) / 2);
  CHECK(costs.costs.comm_ms == std::vector<double>{2, 2, 2});
}

TEST_CASE("a V schedule on an N-stage split gives rank r's halves to model stages r and 2N - 1 - r",
          "[schedule][profile-costs]") {
  BoundaryLink link;
  link.latency_ms = 2;
  const PartitionCosts costs = costsFromPartition(makeProfile(4), makePartition({1, 3}),
                                                  stagecut::Placement{2, 2, stagecut::Placement::Style::kV}, link, "part.json");
  REQUIRE(costs.costs.stages.size() == 4);  // model stages: rank 0, rank 1, rank 1, rank 0
  CHECK(costs.costs.stages[0].forward_ms == Approx(0.5 / 2));
  CHECK(costs.costs.stages[1].forward_ms == Approx((1.5 + 2.5 + 3.5) / 2));
  CHECK(costs.costs.stages[2].forward_ms == Approx((1.5 + 2.5 + 3.5) / 2));
  CHECK(costs.costs.stages[3].forward_ms == Approx(0.5 / 2));
  CHECK(costs.costs.comm_ms.size() == 3);
}

TEST_CASE("a partition that does not cover the profile is rejected", "[schedule][profile-costs]") {
  CHECK_THROWS_AS(costsFromPartition(makeProfile(5), makePartition({2, 2}), stagecut::Placement::loop(2, 1), {}, "part.json"),
                  stagecut::Error);
}

TEST_CASE("rank adjustments share a rank's extra time among its chunks and divide by its speed",
          "[schedule][costs]") {
  stagecut::PipelineCosts costs;
  costs.stages.assign(4, stagecut::StageOpCosts{1.0, 2.0, 1.0, 1.0, 100});  // 2 ranks x 2 chunks
  stagecut::RankAdjustments adjustments;
  adjustments.extra_backward_ms = {4.0, 0.0};
  adjustments.kept_activation_bytes = {10, 20};
  adjustments.speed = {1.0, 0.5};
  stagecut::applyRankAdjustments(adjustments, stagecut::Placement::loop(2, 2), &costs);
  // Rank 0 holds model stages 0 and 2: 4 ms shared by 2 chunks; rank 1 (1 and 3) runs at half speed.
  CHECK(costs.stages[0].backward_ms == 4.0);
  CHECK(costs.stages[2].backward_input_ms == 3.0);
  CHECK(costs.stages[0].activation_bytes == 5u);
  CHECK(costs.stages[1].forward_ms == 2.0);
  CHECK(costs.stages[3].backward_weight_ms == 2.0);
  CHECK(costs.stages[3].activation_bytes == 10u);
  adjustments.speed = {1.0};
  CHECK_THROWS_WITH(stagecut::applyRankAdjustments(adjustments, stagecut::Placement::loop(2, 2), &costs),
                    "--stage-speed: 1 values for 2 ranks; give one per rank");
}

TEST_CASE("a chunked split's adjustments are each chunk's own, and speed follows the chunk's rank",
          "[schedule][costs]") {
  stagecut::PipelineCosts costs;
  costs.stages.assign(4, stagecut::StageOpCosts{1.0, 2.0, 1.0, 1.0, 100});
  stagecut::RankAdjustments adjustments;
  adjustments.extra_backward_ms = {1.0, 2.0, 3.0, 4.0};  // per chunk
  adjustments.speed = {1.0, 0.5};
  // V placement: rank 0 holds chunks 0 and 3, rank 1 chunks 1 and 2.
  stagecut::applyRankAdjustments(adjustments, stagecut::Placement{2, 2, stagecut::Placement::Style::kV}, &costs);
  CHECK(costs.stages[0].backward_ms == 3.0);
  CHECK(costs.stages[3].backward_ms == 6.0);
  CHECK(costs.stages[1].backward_ms == (2.0 + 2.0) / 0.5);
  CHECK(costs.stages[2].backward_ms == (2.0 + 3.0) / 0.5);
  CHECK(costs.stages[2].forward_ms == 2.0);
}

TEST_CASE("a chunked partition gives each model stage its own chunk's costs", "[schedule][profile-costs]") {
  const stagecut::Profile profile = makeProfile(6);
  stagecut::Partition partition = makePartition({1, 2, 2, 1});
  partition.placement = stagecut::Placement::loop(2, 2);
  const stagecut::PartitionCosts costs = costsFromPartition(profile, partition, stagecut::Placement::loop(2, 2), stagecut::BoundaryLink{0, 1.0}, "p.json");
  REQUIRE(costs.costs.stages.size() == 4);
  for (std::size_t s = 0; s < 4; ++s) {
    double forward = 0;
    for (int i = partition.stages[s].first; i <= partition.stages[s].last; ++i) forward += profile.layers[i].forward_ms.median;
    CHECK(costs.costs.stages[s].forward_ms == Approx(forward));
  }
  CHECK(costs.costs.comm_ms.size() == 3);
  CHECK_THROWS_WITH(costsFromPartition(profile, partition, stagecut::Placement::loop(2, 3), {}, "p.json"),
                    "p.json: the split places 2 ranks x 2 chunks; it runs only as placed, not on 2 ranks x 3 chunks");
  CHECK_THROWS_WITH(costsFromPartition(profile, partition, stagecut::Placement{2, 2, stagecut::Placement::Style::kV}, {}, "p.json"),
                    "p.json: the split places 2 ranks x 2 chunks; it runs only as placed, not on 2 ranks x 2 chunks in a V");
}
