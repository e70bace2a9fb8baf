#include <catch2/catch.hpp>

#include "core/error.h"
#include "partitioner/chunked_partition.h"
#include "partitioner/schedule_choices.h"
#include "schedule/closed_form.h"
#include "test_support.h"

using stagecut::PartitionOptions;
using stagecut::Placement;
using stagecut::ScheduleChoice;
using stagecut::ScheduleKind;

namespace {

// A chain of `layers` equal layers: F 1 ms, B 1 ms, W 1 ms, so that every schedule's best split
// cuts it evenly and its step is its closed form.
stagecut::Profile equalChain(int layers) {
  stagecut::Profile profile = stagecut::testing::makeProfile(layers);
  for (auto& layer : profile.layers) {
    layer.forward_ms = stagecut::TimeStatsMs::exactly(1.0);
    layer.backward_ms = stagecut::TimeStatsMs::exactly(2.0);
    layer.backward_input_ms = stagecut::TimeStatsMs::exactly(1.0);
    layer.backward_weight_ms = stagecut::TimeStatsMs::exactly(1.0);
  }
  profile.run.extra[stagecut::kWeightGradientTimingKey] = stagecut::kWeightGradientTimedAfterInput;
  return profile;
}

}  // namespace

TEST_CASE("each schedule's best split of an even chain runs in its closed form's step", "[partitioner][chunks]") {
  const int stages = 3, microbatches = 6, layers = 3 * 24;  // every v of 1..4 and the V divide 24
  const stagecut::Profile profile = equalChain(layers);
  PartitionOptions options;
  options.placement = stagecut::Placement::loop(stages, 1);
  options.microbatches = microbatches;
  options.rules = stagecut::SplitRuleSet::kAny;
  const std::vector<ScheduleChoice> choices = stagecut::bestSplitPerSchedule(profile, options, "chain");
  REQUIRE(choices.size() == 7);
  // One stage's work per microbatch: F + B + W over L / N layers.
  const double stage = 3.0 * layers / stages;
  for (const ScheduleChoice& choice : choices) {
    INFO(stagecut::scheduleName(choice.schedule) << " v " << choice.placement.chunks_per_rank);
    REQUIRE(choice.split);
    CHECK(choice.exact);
    CHECK(choice.split->bottleneck_ms == Approx(stage));
    CHECK(choice.split->stages.size() == static_cast<std::size_t>(stages * choice.placement.chunks_per_rank));
    const std::optional<double> bubble =
        stagecut::closedFormBubble(choice.schedule, choice.placement, microbatches, true);
    REQUIRE(bubble);
    const double closed_step = stage * microbatches / (1.0 - *bubble);
    if (choice.schedule == ScheduleKind::kDualPipeV) {
      // Among chunkings as slow on their slowest rank, the simulated step chooses: DualPipeV's
      // order gains from a shorter first chunk (a quicker fill), so it may beat the even chunks' bound.
      CHECK(choice.step_ms <= closed_step + 1e-9);
    } else {
      CHECK(choice.bubble == Approx(*bubble));
      CHECK(choice.step_ms == Approx(closed_step));
    }
    if (choice.placement.chunked()) {
      CHECK(choice.split->placement->style == stagecut::chunkStyle(choice.schedule));
    }
  }
  // ZB-V's (N-1)/(6M+N-1) is the smallest bubble of the rest; DualPipeV (M = 2N here) does no worse.
  CHECK(choices[5].schedule == ScheduleKind::kZeroBubbleV);
  CHECK(choices[6].schedule == ScheduleKind::kDualPipeV);
  CHECK(choices[6].step_ms <= choices[5].step_ms + 1e-9);
  for (std::size_t i = 0; i < 5; ++i) CHECK(choices[5].step_ms <= choices[i].step_ms + 1e-9);
}

TEST_CASE("a schedule that cannot run the pipeline is left out with the reason", "[partitioner][chunks]") {
  const stagecut::Profile profile = equalChain(10);
  PartitionOptions options;
  options.placement = stagecut::Placement::loop(3, 1);
  options.microbatches = 7;
  options.rules = stagecut::SplitRuleSet::kAny;
  const std::vector<ScheduleChoice> choices = stagecut::bestSplitPerSchedule(profile, options, "chain");
  REQUIRE(choices.size() == 7);
  for (int i = 2; i <= 4; ++i) {
    CHECK_FALSE(choices[i].split);
    CHECK(choices[i].left_out == "needs the microbatches (7) a multiple of the 3 stages");
  }
  // ZB-V runs any M; 3 x 2 chunks fit 10 layers. DualPipeV needs M >= 2N.
  CHECK(choices[5].split);
  CHECK(choices[6].split);
  options.microbatches = 5;
  CHECK(stagecut::bestSplitPerSchedule(profile, options, "chain")[6].left_out ==
        "needs the microbatches (5) at least twice the 3 stages");
  options.microbatches = 8;
  options.placement = stagecut::Placement::loop(4, 1);
  const std::vector<ScheduleChoice> narrow = stagecut::bestSplitPerSchedule(profile, options, "chain");
  CHECK(narrow[2].split);  // 8 chunks
  CHECK(narrow[3].left_out == "12 chunks need more layers than the profile's 10");
  // Chunked schedules recompute and all-reduce their chunks as the N-stage ones do their stages.
  options.recompute.mode = stagecut::RecomputePolicy::Mode::kFull;
  options.data_parallel = 2;
  options.dp_bandwidth_bytes_per_s = 1e9;
  const std::vector<ScheduleChoice> replicated = stagecut::bestSplitPerSchedule(profile, options, "chain");
  for (std::size_t i : {0u, 2u, 5u}) {
    REQUIRE(replicated[i].split);
    for (const auto& stage : replicated[i].split->stages) CHECK(stage.recompute == std::optional<std::string>("full"));
    CHECK(replicated[i].step_ms > narrow[i].step_ms);  // the forward again and the all-reduce
  }
}
