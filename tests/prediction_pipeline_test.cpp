#include <algorithm>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "core/error.h"
#include "core/profile_json.h"
#include "partitioner/cost_model.h"
#include "partitioner/partition_options.h"
#include "partitioner/profile_partitioner.h"
#include "prediction/pipeline_prediction.h"
#include "prediction/recompute.h"
#include "schedule/generators.h"
#include "schedule/in_flight.h"
#include "tests/test_support.h"

using stagecut::OpKind;
using stagecut::Partition;
using stagecut::PipelinePrediction;
using stagecut::PredictionOptions;
using stagecut::Profile;
using stagecut::ScheduleKind;

using stagecut::testing::kExampleGptProfile;

namespace {


// Duration of the first op of `kind` on `rank`.
double firstOpMs(const PipelinePrediction& prediction, int rank, OpKind kind) {
  const auto& ops = prediction.schedule.ranks[static_cast<std::size_t>(rank)];
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].kind == kind) {
      const auto& timing = prediction.simulated.op_times[static_cast<std::size_t>(rank)][i];
      return timing.end_ms - timing.start_ms;
    }
  }
  return -1.0;
}

double layerSum(const Profile& profile, int first, int last, bool forward) {
  double sum = 0.0;
  for (int k = first; k <= last; ++k) {
    sum += forward ? profile.layers[k].forward_ms.median : profile.layers[k].backward_ms.median;
  }
  return sum;
}

}  // namespace

TEST_CASE("a prediction's ops cost the sums of the stage's layer medians", "[prediction]") {
  const Profile profile = stagecut::readProfileFile(kExampleGptProfile);
  const Partition split = stagecut::testing::makePartition({6, 5});
  PredictionOptions options;
  options.microbatches = 4;
  const PipelinePrediction prediction = stagecut::predictPipeline(profile, split, options, "split");
  CHECK(firstOpMs(prediction, 0, OpKind::kForward) == Approx(layerSum(profile, 0, 5, true)));
  CHECK(firstOpMs(prediction, 1, OpKind::kBackward) == Approx(layerSum(profile, 6, 10, false)));
  CHECK(prediction.pipeline_step_ms == prediction.simulated.step_ms);
  CHECK_FALSE(prediction.recomputes);
}

TEST_CASE("a stage that recomputes runs its forward again before B and keeps only its input",
          "[prediction][recompute]") {
  const Profile profile = stagecut::readProfileFile(kExampleGptProfile);
  Partition split = stagecut::testing::makePartition({6, 5});
  PredictionOptions options;
  options.schedule = ScheduleKind::kGpipe;
  options.microbatches = 4;
  const PipelinePrediction plain = stagecut::predictPipeline(profile, split, options, "split");
  split.stages[1].recompute = "full";
  const PipelinePrediction recomputed = stagecut::predictPipeline(profile, split, options, "split");
  CHECK(recomputed.recomputes);
  // Rank 1 holds layers 6..10: its B grows by their forward; rank 0 is untouched.
  CHECK(firstOpMs(recomputed, 1, OpKind::kBackward) ==
        Approx(layerSum(profile, 6, 10, false) + layerSum(profile, 6, 10, true)));
  CHECK(firstOpMs(recomputed, 0, OpKind::kBackward) == Approx(firstOpMs(plain, 0, OpKind::kBackward)));
  // GPipe keeps all M microbatches: rank 1 keeps M inputs (layer 5's output), not M activations.
  CHECK(recomputed.simulated.ranks[1].peak_activation_bytes == 4 * profile.layers[5].output_bytes);
  CHECK(recomputed.simulated.ranks[0].peak_activation_bytes == plain.simulated.ranks[0].peak_activation_bytes);
  CHECK(recomputed.simulated.step_ms > plain.simulated.step_ms);

  split.stages[1].recompute = "sometimes";
  CHECK_THROWS_WITH(stagecut::predictPipeline(profile, split, options, "split.json"),
                    Catch::Matchers::StartsWith("split.json: stage 1: --recompute sometimes: unknown mode"));
}

TEST_CASE("a stage's speed divides all its op times", "[prediction]") {
  const Profile profile = stagecut::readProfileFile(kExampleGptProfile);
  const Partition split = stagecut::testing::makePartition({6, 5});
  PredictionOptions options;
  options.microbatches = 4;
  const PipelinePrediction plain = stagecut::predictPipeline(profile, split, options, "split");
  options.stage_speed = {1.0, 0.5};
  const PipelinePrediction slow = stagecut::predictPipeline(profile, split, options, "split");
  CHECK(firstOpMs(slow, 1, OpKind::kForward) == Approx(2 * firstOpMs(plain, 1, OpKind::kForward)));
  CHECK(firstOpMs(slow, 0, OpKind::kForward) == Approx(firstOpMs(plain, 0, OpKind::kForward)));
  CHECK(slow.simulated.step_ms > plain.simulated.step_ms);
  options.stage_speed = {1.0};
  CHECK_THROWS_WITH(stagecut::predictPipeline(profile, split, options, "split"),
                    "--stage-speed: 1 values for 2 ranks; give one per rank");
}

TEST_CASE("with data parallelism every rank ends with its all-reduce and the pipeline's step is kept apart",
          "[prediction][data-parallel]") {
  const Profile profile = stagecut::readProfileFile(kExampleGptProfile);
  const Partition split = stagecut::testing::makePartition({6, 5});
  PredictionOptions options;
  options.microbatches = 4;
  options.data_parallel = 4;
  options.dp_link = {10e9, 0.01};
  const PipelinePrediction prediction = stagecut::predictPipeline(profile, split, options, "split");
  for (const auto& ops : prediction.schedule.ranks) CHECK(ops.back().kind == OpKind::kAllReduce);
  std::uint64_t rank1_bytes = 0;
  for (int k = 6; k <= 10; ++k) rank1_bytes += profile.layers[k].param_bytes;
  // Ring all-reduce over D = 4: 2 (D - 1) / D x bytes / bandwidth + 2 (D - 1) x latency.
  CHECK(prediction.costs.allreduce_ms[1] == Approx(1.5 * rank1_bytes / 10e9 * 1e3 + 6 * 0.01));
  CHECK(prediction.pipeline_step_ms < prediction.simulated.step_ms);
  options.data_parallel = 0;
  CHECK_THROWS_WITH(stagecut::predictPipeline(profile, split, options, "split"),
                    Catch::Matchers::StartsWith("--data-parallel 0: each stage needs at least 1 replica"));
}

TEST_CASE("in-flight activations follow the op lists; GPipe's and 1F1B's closed forms equal them",
          "[prediction][schedule]") {
  for (int stages = 1; stages <= 6; ++stages) {
    for (int microbatches = 1; microbatches <= 13; ++microbatches) {
      for (ScheduleKind kind : stagecut::allScheduleKinds()) {
        for (int chunks : {1, 2, 3}) {
          const stagecut::Placement placement = stagecut::Placement{stages, chunks, stagecut::chunkStyle(kind)};
          if (!stagecut::runsPlacement(kind, placement) && !(chunks == 1 && !stagecut::runsChunks(kind))) continue;
          if (!stagecut::microbatchCountProblem(kind, stages, microbatches).empty()) continue;
          const stagecut::Schedule schedule = stagecut::generateSchedule(kind, placement, microbatches);
          const std::vector<int> peaks = stagecut::peakInFlight(schedule);
          const std::vector<double> share = stagecut::inFlightActivationShare(kind, placement, microbatches);
          stagecut::PipelineCosts costs = stagecut::unitCosts(schedule);
          for (auto& stage : costs.stages) stage.activation_bytes = 1;
          const stagecut::SimulationResult simulated = stagecut::simulate(schedule, costs);
          REQUIRE(share.size() == static_cast<std::size_t>(stages));
          for (int r = 0; r < stages; ++r) {
            INFO(stagecut::scheduleName(kind) << " N=" << stages << " M=" << microbatches << " v=" << chunks
                                              << " rank " << r);
            CHECK(share[r] == Approx(static_cast<double>(peaks[r]) / schedule.placement.chunks_per_rank));
            CHECK(peaks[r] == simulated.ranks[r].peak_in_flight);
            if (kind == ScheduleKind::kGpipe) CHECK(peaks[r] == microbatches);
            if (kind == ScheduleKind::kOneFOneB) CHECK(peaks[r] == std::min(stages - r, microbatches));
          }
        }
      }
    }
  }
}

TEST_CASE("the cost model's prefix tables charge what stageRecomputeMs charges", "[prediction][recompute]") {
  Profile profile = stagecut::readProfileFile(kExampleGptProfile);
  stagecut::PartitionOptions options;
  options.placement = stagecut::Placement::loop(1, 1);
  options.microbatches = 1;
  options.bytes_per_param = 0;
  for (const char* mode : {"full", "selective:TransformerBlock", "none"}) {
    options.recompute = stagecut::parseRecomputePolicy(mode, profile);
    const stagecut::CostModel model = stagecut::buildCostModel(profile, options, "p");
    const stagecut::RecomputeOption option = stagecut::stageRecomputeOption(profile, mode);
    for (int first = 0; first < 11; ++first) {
      for (int last = first; last < 11; ++last) {
        INFO(mode << " layers " << first << ".." << last);
        CHECK(model.recomputeExtraMs(0, first, last) == Approx(stagecut::stageRecomputeMs(option, first, last)));
      }
    }
  }
}
