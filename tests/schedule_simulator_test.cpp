#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "schedule/closed_form.h"
#include "schedule/generators.h"
#include "schedule/message_order.h"
#include "schedule/simulator.h"

using stagecut::generateSchedule;
using stagecut::OpKind;
using stagecut::PipelineCosts;
using stagecut::Schedule;
using stagecut::SimulationResult;
using stagecut::simulate;

namespace {

// Every model stage costs the same: F, an unsplit backward, and B + W where W is split off.
PipelineCosts equalCosts(const Schedule& schedule, double forward, double backward_input,
                         double backward_weight) {
  PipelineCosts costs;
  stagecut::StageOpCosts stage;
  stage.forward_ms = forward;
  stage.backward_input_ms = backward_input;
  stage.backward_weight_ms = backward_weight;
  stage.backward_ms = backward_input + backward_weight;
  costs.stages.assign(static_cast<std::size_t>(schedule.placement.chunkCount()), stage);
  return costs;
}

double idlePerRank(const SimulationResult& result) {
  double idle = 0;
  for (const auto& rank : result.ranks) idle += rank.idle_ms;
  return idle / result.placement.ranks;
}

}  // namespace

TEST_CASE("a two-stage 1F1B step worked out by hand, with transfers", "[schedule][simulator]") {
  // F = 1, B = 2, 0.5 per transfer. Rank 0: F0 [0, 1]; rank 1: F0 arrives at 1.5, runs to 2.5,
  // B0 to 4.5; rank 0: B0 arrives at 5, runs to 7. Busy 3 of 7 on each rank.
  const Schedule schedule = generateSchedule("1f1b", 2, 1);
  PipelineCosts costs = equalCosts(schedule, 1.0, 2.0, 0.0);
  costs.comm_ms = {0.5};
  const SimulationResult result = simulate(schedule, costs);
  CHECK(result.step_ms == Approx(7.0));
  CHECK(result.op_times[0][0].start_ms == Approx(0.0));
  CHECK(result.op_times[1][0].start_ms == Approx(1.5));
  CHECK(result.op_times[1][1].end_ms == Approx(4.5));
  CHECK(result.op_times[0][1].start_ms == Approx(5.0));
  CHECK(result.ranks[0].busy_ms == Approx(3.0));
  CHECK(result.ranks[1].idle_ms == Approx(4.0));
  CHECK(result.bubble == Approx(8.0 / 14.0));
}

TEST_CASE("a V placement's turn on one rank is free, its other boundaries are charged, worked out by hand",
          "[schedule][simulator]") {
  // Rank 0 holds model stages 0 and 3, rank 1 stages 1 and 2. F = 1, B = 2, 0.5 per transfer
  // between ranks: F0 [0, 1], F1 [1.5, 2.5], F2 [2.5, 3.5] (same rank), F3 [4, 5], B3 [5, 7],
  // B2 [7.5, 9.5], B1 [9.5, 11.5] (same rank), B0 [12, 14].
  Schedule schedule;
  schedule.name = "v by hand";
  schedule.placement.ranks = 2;
  schedule.placement.chunks_per_rank = 2;
  schedule.microbatches = 1;
  schedule.placement.style = stagecut::Placement::Style::kV;
  for (int rank = 0; rank < 2; ++rank) {
    schedule.ranks.push_back({{OpKind::kForward, 0, 0}, {OpKind::kForward, 0, 1}, {OpKind::kBackward, 0, 1},
                              {OpKind::kBackward, 0, 0}});
  }
  PipelineCosts costs = equalCosts(schedule, 1.0, 2.0, 0.0);
  costs.comm_ms = {0.5, 0.5, 0.5};
  const SimulationResult result = simulate(schedule, costs);
  CHECK(result.op_times[1][1].start_ms == Approx(2.5));
  CHECK(result.op_times[0][1].start_ms == Approx(4.0));
  CHECK(result.op_times[1][3].start_ms == Approx(9.5));
  CHECK(result.step_ms == Approx(14.0));
  CHECK_FALSE(stagecut::firstMessageOrderMismatch(schedule).has_value());
}

TEST_CASE("GPipe and 1F1B leave (N-1)/(M+N-1) idle for all N <= 16, M <= 64",
          "[schedule][simulator][closed-form]") {
  // Equal stages: the first microbatch needs N - 1 forward slots to reach the last stage and
  // its gradient N - 1 backward slots to return, and nothing else waits, so a step is
  // (M + N - 1)(F + B) and each rank idles (N - 1)(F + B) of it.
  for (const char* name : {"gpipe", "1f1b"}) {
    for (int stages = 1; stages <= 16; ++stages) {
      for (int microbatches = 1; microbatches <= 64; ++microbatches) {
        INFO(name << " N = " << stages << " M = " << microbatches);
        const Schedule schedule = generateSchedule(name, stages, microbatches);
        const SimulationResult result = simulate(schedule, equalCosts(schedule, 1.0, 1.0, 0.0));
        CHECK(result.step_ms == Approx(2.0 * (microbatches + stages - 1)));
        CHECK(result.bubble == Approx((stages - 1.0) / (microbatches + stages - 1)));
      }
    }
  }
  // The ratio of forward to backward does not matter.
  const Schedule schedule = generateSchedule("1f1b", 4, 8);
  CHECK(simulate(schedule, equalCosts(schedule, 1.0, 2.0, 0.0)).bubble == Approx(3.0 / 11.0));
}

TEST_CASE("1F1B keeps min(N - r, M) microbatches in flight on rank r, GPipe keeps M",
          "[schedule][simulator]") {
  for (int stages = 1; stages <= 16; ++stages) {
    for (int microbatches = 1; microbatches <= 64; microbatches += 7) {
      INFO("N = " << stages << " M = " << microbatches);
      const Schedule one_f_one_b = generateSchedule("1f1b", stages, microbatches);
      const Schedule gpipe = generateSchedule("gpipe", stages, microbatches);
      const SimulationResult a = simulate(one_f_one_b, equalCosts(one_f_one_b, 1, 1, 0));
      const SimulationResult b = simulate(gpipe, equalCosts(gpipe, 1, 1, 0));
      for (int rank = 0; rank < stages; ++rank) {
        CHECK(a.ranks[rank].peak_in_flight == std::min(stages - rank, microbatches));
        CHECK(b.ranks[rank].peak_in_flight == microbatches);
      }
    }
  }
}

TEST_CASE("interleaved 1F1B shrinks the fill and drain by the factor v",
          "[schedule][simulator][closed-form]") {
  // Each rank's work per microbatch is F + B = 3 split into v chunks. Fill and drain now pass
  // N - 1 chunk slots of (F + B) / v instead of stage slots (Narayanan et al. 2021), so a step
  // is 3 M + 3 (N - 1) / v: the bubble is (N - 1) / v of the ideal 3 M.
  for (int stages : {2, 3, 4, 8}) {
    for (int groups : {1, 2, 4}) {
      for (int chunks : {2, 3, 4}) {
        const int microbatches = groups * stages;
        INFO("N = " << stages << " M = " << microbatches << " v = " << chunks);
        const Schedule schedule =
            generateSchedule("interleaved-1f1b", stages, microbatches, chunks);
        const double f = 1.0 / chunks, b = 2.0 / chunks;
        const SimulationResult result = simulate(schedule, equalCosts(schedule, f, b, 0.0));
        const double ideal = 3.0 * microbatches;
        CHECK(result.step_ms == Approx(ideal + 3.0 * (stages - 1) / chunks));
        CHECK(idlePerRank(result) == Approx(3.0 * (stages - 1) / chunks));
        CHECK(result.bubble ==
              Approx((stages - 1.0) / (chunks * microbatches + stages - 1.0)));
        // Rank r runs 2 (N - r - 1) + (v - 1) N warm-up forwards, then one more before its
        // first backward frees anything.
        for (int rank = 0; rank < stages; ++rank) {
          CHECK(result.ranks[rank].peak_in_flight ==
                std::min(2 * (stages - rank - 1) + (chunks - 1) * stages + 1,
                         chunks * microbatches));
        }
      }
    }
  }
}

TEST_CASE("ZB-H1 with F = B = W idles a third of what 1F1B idles", "[schedule][simulator]") {
  // 1F1B runs B + W = 2 as one backward: each rank idles (N - 1)(F + B + W) = 3 (N - 1).
  // In ZB-H1 the last rank gets F0 at N - 1 and never waits again (its B's need only its own
  // F's, and F(m + 1) arrives while it runs B(m)); it runs 3 M ops, ending at 3 M + N - 1, and
  // the W's that each rank r deferred fill its drain. So each rank idles N - 1: the
  // (N - 1)(F + B - W) of Qi et al. (2023), a third of 1F1B's.
  for (int stages = 2; stages <= 12; ++stages) {
    for (int microbatches = stages; microbatches <= 48; microbatches += 5) {
      INFO("N = " << stages << " M = " << microbatches);
      const Schedule zero_bubble = generateSchedule("zb-h1", stages, microbatches);
      const Schedule one_f_one_b = generateSchedule("1f1b", stages, microbatches);
      const SimulationResult zb = simulate(zero_bubble, equalCosts(zero_bubble, 1, 1, 1));
      const SimulationResult base = simulate(one_f_one_b, equalCosts(one_f_one_b, 1, 1, 1));
      CHECK(zb.step_ms == Approx(3.0 * microbatches + stages - 1));
      CHECK(idlePerRank(zb) == Approx(stages - 1.0));
      CHECK(idlePerRank(base) == Approx(3.0 * (stages - 1)));
      CHECK(zb.bubble == Approx((stages - 1.0) / (3.0 * microbatches + stages - 1)));
      for (int rank = 0; rank < stages; ++rank) {
        CHECK(zb.ranks[rank].peak_in_flight == stages);
        CHECK(zb.ranks[rank].peak_in_flight <= base.ranks[0].peak_in_flight);
      }
    }
  }
}

TEST_CASE("ZB-V with F = B = W on every chunk takes 6M + N - 1 slots, the least any schedule can",
          "[schedule][simulator][closed-form]") {
  // Each rank runs F, B and W of M microbatches on each of its two chunks: 6 M slots. Rank
  // N - 1 cannot start before microbatch 0's forward has crossed the N - 1 chunks above it, so
  // no schedule finishes before 6 M + N - 1; ZB-V reaches that bound once the V is full
  // (M >= 2N - 1), and below it, where PyTorch leaves out the planned microbatches past M, it
  // still runs but cannot fill its slots.
  for (int stages = 1; stages <= 10; ++stages) {
    for (int microbatches = 1; microbatches <= 40; microbatches += 3) {
      INFO("N = " << stages << " M = " << microbatches);
      const Schedule schedule = generateSchedule("zb-v", stages, microbatches, 2);
      const SimulationResult result = simulate(schedule, equalCosts(schedule, 1, 1, 1));
      const double bound = 6.0 * microbatches + stages - 1;
      if (microbatches >= 2 * stages - 1) {
        CHECK(result.step_ms == Approx(bound));
        CHECK(result.bubble == Approx(stagecut::zeroBubbleVBubbleFraction(stages, microbatches)));
      } else {
        CHECK(result.step_ms >= bound - 1e-9);
      }
      // Two chunks of half a stage each: 2N chunk sets are N stages' worth, 1F1B's rank 0.
      for (int rank = 0; rank < stages; ++rank) {
        CHECK(result.ranks[rank].peak_in_flight <= std::min(2 * stages, 2 * microbatches));
      }
      CHECK_FALSE(stagecut::firstMessageOrderMismatch(schedule).has_value());
    }
  }
}

TEST_CASE("DualPipeV with F = B = W on every chunk reaches zb-v's bound, 6M + N - 1 slots",
          "[schedule][simulator][closed-form]") {
  for (int stages = 1; stages <= 10; ++stages) {
    for (int microbatches = 2 * stages; microbatches <= 2 * stages + 30; microbatches += 3) {
      INFO("N = " << stages << " M = " << microbatches);
      const Schedule schedule = generateSchedule("dualpipe-v", stages, microbatches, 2);
      const SimulationResult result = simulate(schedule, equalCosts(schedule, 1, 1, 1));
      CHECK(result.step_ms == Approx(6.0 * microbatches + stages - 1));
      const auto closed = stagecut::closedFormBubble(stagecut::ScheduleKind::kDualPipeV, schedule.placement, microbatches, true);
      REQUIRE(closed.has_value());
      CHECK(result.bubble == Approx(*closed));
      // On unequal costs the bound does not hold and no closed form is claimed.
      CHECK_FALSE(stagecut::closedFormBubble(stagecut::ScheduleKind::kDualPipeV, schedule.placement, microbatches, false));
    }
  }
  CHECK_FALSE(stagecut::closedFormBubble(stagecut::ScheduleKind::kDualPipeV,
                                         stagecut::schedulePlacement(stagecut::ScheduleKind::kDualPipeV, 4), 7, true));
}

TEST_CASE("the slowest stage sets the pace of an unbalanced pipeline", "[schedule][simulator]") {
  // Stage 1 costs 2 + 4 per microbatch, stage 0 1 + 2. Once F0 reaches stage 1 (at 1, plus the
  // transfer) it never waits: the step is F0 on stage 0, 4 x 6 on stage 1, B3 on stage 0.
  const SimulationResult plain = simulate(stagecut::generateSchedule("1f1b", 2, 4), stagecut::costsFromStageTimes({1, 2}, {2, 4}, 0.0));
  CHECK(plain.step_ms == Approx(1 + 24 + 2));
  CHECK(plain.ranks[1].idle_ms == Approx(3.0));
  const SimulationResult sending = simulate(stagecut::generateSchedule("1f1b", 2, 4), stagecut::costsFromStageTimes({1, 2}, {2, 4}, 0.5));
  CHECK(sending.step_ms == Approx(1 + 0.5 + 24 + 0.5 + 2));
}

TEST_CASE("transfers cost nothing between chunks on the same rank", "[schedule][simulator]") {
  const Schedule schedule = generateSchedule("interleaved-1f1b", 1, 3, 2);
  PipelineCosts costs = equalCosts(schedule, 1, 1, 0);
  const double step_without = simulate(schedule, costs).step_ms;
  costs.comm_ms = {100.0};
  CHECK(simulate(schedule, costs).step_ms == Approx(step_without));
  CHECK(step_without == Approx(2 * 2 * 3));
}

TEST_CASE("peak activation bytes follow the microbatches in flight", "[schedule][simulator]") {
  const Schedule schedule = generateSchedule("1f1b", 3, 6);
  PipelineCosts costs = equalCosts(schedule, 1, 1, 0);
  for (std::size_t s = 0; s < costs.stages.size(); ++s) costs.stages[s].activation_bytes = 1000 * (s + 1);
  const SimulationResult result = simulate(schedule, costs);
  CHECK(result.ranks[0].peak_activation_bytes == 3 * 1000);
  CHECK(result.ranks[1].peak_activation_bytes == 2 * 2000);
  CHECK(result.ranks[2].peak_activation_bytes == 1 * 3000);
}

TEST_CASE("a schedule whose ranks wait on each other is a deadlock naming the ops",
          "[schedule][simulator][errors]") {
  Schedule schedule = generateSchedule("1f1b", 2, 2);
  // Rank 1 insists on microbatch 1 first; rank 0 will not send it before B0 comes back.
  schedule.ranks[1] = {{OpKind::kForward, 1, 0},
                       {OpKind::kForward, 0, 0},
                       {OpKind::kBackward, 0, 0},
                       {OpKind::kBackward, 1, 0}};
  schedule.ranks[0] = {{OpKind::kForward, 0, 0},
                       {OpKind::kBackward, 0, 0},
                       {OpKind::kForward, 1, 0},
                       {OpKind::kBackward, 1, 0}};
  const PipelineCosts costs = equalCosts(schedule, 1, 1, 0);
  CHECK_THROWS_WITH(simulate(schedule, costs),
                    "schedule '1f1b' deadlocks: rank 0 waits at B(0) for B(0) of rank 1; rank 1 "
                    "waits at F(1) for F(1) of rank 0; reorder the op lists so that every op's "
                    "inputs come first");

  Schedule backwards_first = generateSchedule("gpipe", 1, 1);
  std::swap(backwards_first.ranks[0][0], backwards_first.ranks[0][1]);
  CHECK_THROWS_WITH(simulate(backwards_first, equalCosts(backwards_first, 1, 1, 0)),
                    "schedule 'gpipe' deadlocks: rank 0 waits at B(0) for F(0) later in its own "
                    "list; reorder the op lists so that every op's inputs come first");
}

TEST_CASE("costs that do not fit the schedule are rejected", "[schedule][simulator][errors]") {
  const Schedule schedule = generateSchedule("interleaved-1f1b", 2, 2, 2);
  PipelineCosts costs = equalCosts(schedule, 1, 1, 0);
  costs.stages.pop_back();
  CHECK_THROWS_WITH(simulate(schedule, costs),
                    "schedule 'interleaved-1f1b': costs for 3 model stages, but 2 ranks x 2 "
                    "chunks need 4; give one per model stage");
  costs = equalCosts(schedule, 1, 1, 0);
  costs.comm_ms = {1.0};
  CHECK_THROWS_WITH(simulate(schedule, costs),
                    "schedule 'interleaved-1f1b': 1 communication times for 3 boundaries; give "
                    "one per boundary, or none");
  costs.comm_ms.clear();
  costs.stages[2].forward_ms = -1;
  CHECK_THROWS_WITH(simulate(schedule, costs),
                    "model stage 2: forward_ms is -1; times must be finite and >= 0");
  CHECK_THROWS_WITH(stagecut::costsFromStageTimes({1, 2}, {2}, 0.0),
                    "stage times: 2 forward and 1 backward times; give one of each per stage, at "
                    "least one stage");
}
