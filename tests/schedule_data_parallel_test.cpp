#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.h"
#include "schedule/data_parallel.h"
#include "schedule/generators.h"
#include "schedule/simulator.h"
#include "schedule/stage_costs.h"

using stagecut::BoundaryLink;
using stagecut::checkScheduleComplete;
using stagecut::generateSchedule;
using stagecut::OpKind;
using stagecut::PipelineCosts;
using stagecut::PipelineOp;
using stagecut::ringAllReduceMs;
using stagecut::Schedule;
using stagecut::SimulationResult;
using stagecut::simulate;
using stagecut::unitCosts;
using stagecut::withGradientAllReduce;

namespace {

// The timing of rank `rank`'s all-reduce of local chunk `chunk`.
stagecut::OpTiming allReduceTiming(const Schedule& schedule, const SimulationResult& result,
                                   int rank, int chunk) {
  const auto& ops = schedule.ranks[rank];
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].kind == OpKind::kAllReduce && ops[i].chunk == chunk) return result.op_times[rank][i];
  }
  FAIL("no all-reduce of chunk " << chunk << " on rank " << rank);
  return {};
}

}  // namespace

TEST_CASE("a ring all-reduce moves 2 (D-1)/D of the bytes and pays 2 (D-1) latencies",
          "[schedule][data-parallel]") {
  const BoundaryLink link{100e9, 0.01};  // 100 GB/s, 10 us
  // 1 GB over 4 replicas: 1.5 GB on the wire at 100 GB/s = 15 ms... times 1/2 per direction:
  // 2 x 3/4 x 1e9 / 1e11 s = 15 ms, plus 6 x 0.01 ms.
  CHECK(ringAllReduceMs(1000000000, 4, link) == Approx(15.0 + 0.06));
  CHECK(ringAllReduceMs(1000000000, 2, link) == Approx(10.0 + 0.02));
  CHECK(ringAllReduceMs(1000000000, 1, link) == 0.0);
  CHECK(ringAllReduceMs(0, 8, link) == Approx(14 * 0.01));
  CHECK(ringAllReduceMs(1000, 2, BoundaryLink{}) == 0.0);
  CHECK_THROWS_WITH(ringAllReduceMs(1, 0, link),
                    "--data-parallel 0: each stage needs at least 1 replica; use --data-parallel 1 "
                    "for a plain pipeline");
}

TEST_CASE("withGradientAllReduce appends one A per local chunk, the last chunk first",
          "[schedule][data-parallel]") {
  const Schedule plain = generateSchedule("interleaved-1f1b", 2, 4, 3);
  const Schedule schedule = withGradientAllReduce(plain);
  CHECK_FALSE(plain.hasAllReduce());
  CHECK(schedule.hasAllReduce());
  for (int rank = 0; rank < 2; ++rank) {
    const auto& ops = schedule.ranks[rank];
    REQUIRE(ops.size() == plain.ranks[rank].size() + 3);
    CHECK(std::equal(plain.ranks[rank].begin(), plain.ranks[rank].end(), ops.begin()));
    CHECK(ops[ops.size() - 3] == PipelineOp{OpKind::kAllReduce, 0, 2});
    CHECK(ops[ops.size() - 2] == PipelineOp{OpKind::kAllReduce, 0, 1});
    CHECK(ops[ops.size() - 1] == PipelineOp{OpKind::kAllReduce, 0, 0});
  }
  CHECK_NOTHROW(checkScheduleComplete(schedule));
  CHECK_THROWS_WITH(withGradientAllReduce(schedule),
                    "schedule 'interleaved-1f1b' already holds all-reduce ops; add the gradient "
                    "all-reduce once");
  CHECK(stagecut::describeOp({OpKind::kAllReduce, 0, 2}, stagecut::Placement::loop(2, 3)) == "A(c2)");
  CHECK(stagecut::describeOp({OpKind::kAllReduce, 0, 0}, stagecut::Placement::loop(2, 1)) == "A");
}

TEST_CASE("a schedule holds at most one all-reduce per chunk, on microbatch 0",
          "[schedule][data-parallel]") {
  Schedule schedule = withGradientAllReduce(generateSchedule("1f1b", 2, 2));
  schedule.ranks[1].push_back({OpKind::kAllReduce, 0, 0});
  CHECK_THROWS_WITH(checkScheduleComplete(schedule),
                    "schedule '1f1b': rank 1: op A appears twice; each chunk's gradients are "
                    "all-reduced once per step");
  schedule.ranks[1].back() = {OpKind::kAllReduce, 1, 0};
  CHECK_THROWS_WITH(checkScheduleComplete(schedule),
                    "schedule '1f1b': rank 1: all-reduce op of chunk 0, microbatch 1 is out of "
                    "range; an all-reduce has microbatch 0 and a chunk in 0..0");
  schedule.ranks[1].pop_back();
  schedule.ranks[1].pop_back();  // a rank without its all-reduce is still a complete schedule
  CHECK_NOTHROW(checkScheduleComplete(schedule));
}

TEST_CASE("1F1B with all-reduce on unit costs: each rank's A starts at its last backward",
          "[schedule][data-parallel][closed-form]") {
  // Unit costs, N = 4, M = 8: the 1F1B step is 3 (M + N - 1) = 33 and rank r's last backward
  // ends 2 r earlier (the last gradient returns through r more 2-slot backwards), so rank r's
  // all-reduce runs from 33 - 2 r to 33 - 2 r + a_r and the step is max_r (33 - 2 r + a_r).
  const Schedule schedule = withGradientAllReduce(generateSchedule("1f1b", 4, 8));
  PipelineCosts costs = unitCosts(schedule);
  SECTION("equal all-reduce: the step is the 1F1B step plus rank 0's all-reduce") {
    costs.allreduce_ms = {1.5, 1.5, 1.5, 1.5};
    const SimulationResult result = simulate(schedule, costs);
    CHECK(result.step_ms == Approx(33 + 1.5));
    for (int rank = 0; rank < 4; ++rank) {
      CHECK(allReduceTiming(schedule, result, rank, 0).start_ms == Approx(33 - 2 * rank));
      CHECK(result.ranks[rank].allreduce_ms == Approx(1.5));
      CHECK(result.ranks[rank].busy_ms == Approx(24));
    }
    CHECK(result.bubble == Approx(1 - 4 * 24 / (4 * 34.5)));
  }
  SECTION("a large all-reduce on the last stage overlaps the others' cool-down, then shows") {
    costs.allreduce_ms = {1, 1, 1, 10};
    const SimulationResult result = simulate(schedule, costs);
    CHECK(allReduceTiming(schedule, result, 3, 0).start_ms == Approx(27));
    CHECK(result.step_ms == Approx(37));
    costs.allreduce_ms = {1, 1, 1, 6};  // 27 + 6 = 33 < 34: hidden behind rank 0's
    CHECK(simulate(schedule, costs).step_ms == Approx(34));
  }
  SECTION("no all-reduce times: the A ops take 0 and the step is plain 1F1B") {
    CHECK(simulate(schedule, costs).step_ms == Approx(33));
  }
}

TEST_CASE("ZB-H1's all-reduce waits for the rank's last W", "[schedule][data-parallel]") {
  const Schedule schedule = withGradientAllReduce(generateSchedule("zb-h1", 3, 6));
  PipelineCosts costs = unitCosts(schedule);
  costs.allreduce_ms.assign(3, 2.0);
  const SimulationResult result = simulate(schedule, costs);
  const SimulationResult plain = simulate(generateSchedule("zb-h1", 3, 6), unitCosts(schedule));
  for (int rank = 0; rank < 3; ++rank) {
    double last_w = 0;
    const auto& ops = schedule.ranks[rank];
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].kind == OpKind::kWeight) last_w = std::max(last_w, result.op_times[rank][i].end_ms);
    }
    CHECK(allReduceTiming(schedule, result, rank, 0).start_ms == Approx(last_w));
    CHECK(last_w == Approx(plain.op_times[rank].back().end_ms));
  }
  CHECK(result.step_ms == Approx(plain.step_ms + 2.0));
}

TEST_CASE("interleaved ranks all-reduce their chunks one after the other",
          "[schedule][data-parallel]") {
  const Schedule schedule = withGradientAllReduce(generateSchedule("interleaved-1f1b", 2, 4, 2));
  PipelineCosts costs = unitCosts(schedule);
  costs.allreduce_ms = {1, 2, 3, 4};  // model stage c * N + r
  const SimulationResult result = simulate(schedule, costs);
  const SimulationResult plain =
      simulate(generateSchedule("interleaved-1f1b", 2, 4, 2), unitCosts(schedule));
  for (int rank = 0; rank < 2; ++rank) {
    const auto last_chunk = allReduceTiming(schedule, result, rank, 1);
    const auto first_chunk = allReduceTiming(schedule, result, rank, 0);
    CHECK(last_chunk.start_ms == Approx(plain.op_times[rank].back().end_ms));
    CHECK(last_chunk.end_ms - last_chunk.start_ms == Approx(costs.allreduce_ms[2 + rank]));
    CHECK(first_chunk.start_ms == Approx(last_chunk.end_ms));
    CHECK(first_chunk.end_ms - first_chunk.start_ms == Approx(costs.allreduce_ms[rank]));
  }
}

TEST_CASE("an all-reduce before its chunk's last backward deadlocks, named",
          "[schedule][data-parallel]") {
  Schedule schedule = withGradientAllReduce(generateSchedule("1f1b", 2, 2));
  auto& ops = schedule.ranks[1];
  std::rotate(ops.end() - 2, ops.end() - 1, ops.end());  // A before the last B
  CHECK_THROWS_WITH(simulate(schedule, unitCosts(schedule)),
                    Catch::Contains("rank 1 waits at A for B(1) later in its own list"));
}

TEST_CASE("all-reduce times must fit the model stages", "[schedule][data-parallel]") {
  const Schedule schedule = withGradientAllReduce(generateSchedule("1f1b", 2, 2));
  PipelineCosts costs = unitCosts(schedule);
  costs.allreduce_ms = {1.0};
  CHECK_THROWS_WITH(simulate(schedule, costs),
                    "schedule '1f1b': 1 all-reduce times for 2 model stages; give one per model "
                    "stage, or none");
  costs.allreduce_ms = {1.0, -1.0};
  CHECK_THROWS_WITH(simulate(schedule, costs),
                    "model stage 1: allreduce_ms is -1; times must be finite and >= 0");
}
