#include <catch2/catch.hpp>

#include "partitioner/exact_solver.h"
#include "partitioner/partition_options.h"
#include "partitioner/simulated_refinement.h"
#include "partitioner/split_score.h"
#include "tests/test_support.h"

TEST_CASE("refinement by simulated step keeps the optimal bottleneck and never simulates slower",
          "[partitioner][simulate]") {
  stagecut::Profile profile = stagecut::testing::makeProfile(22);
  for (auto& layer : profile.layers) {
    layer.forward_ms = stagecut::TimeStatsMs::exactly(1.0);
    layer.backward_ms = stagecut::TimeStatsMs::exactly(2.0);
  }
  stagecut::PartitionOptions options;
  options.placement = stagecut::Placement::loop(4, 1);
  options.microbatches = 8;
  const stagecut::CostModel model = stagecut::buildCostModel(profile, options, "test");
  const std::vector<int> exact = stagecut::solveExactSplit(model);
  CHECK(exact == std::vector<int>{5, 5, 6, 6});
  const stagecut::SimulatedRefinement refined = stagecut::refineBySimulatedStep(profile, options, model, exact);
  CHECK(refined.candidates > 1);
  CHECK_FALSE(refined.truncated);
  CHECK(refined.simulated_step_ms <= refined.exact_split_simulated_ms);
  CHECK(stagecut::scoreSplit(model, refined.layers_per_stage).bottleneck_ms == 18.0);
  // The closed form charges sum + (M - 1) x bottleneck = 66 + 7 x 18 = 192 ms for every such
  // split; the simulator sees that where the slow stages sit matters.
  CHECK(refined.simulated_step_ms <= 192.0);
}
