#include <catch2/catch.hpp>

#include <algorithm>

#include "core/error.h"
#include "schedule/data_parallel.h"
#include "schedule/generators.h"
#include "schedule/message_order.h"

using stagecut::firstMessageOrderMismatch;
using stagecut::generateSchedule;
using stagecut::OpKind;
using stagecut::PipelineOp;
using stagecut::Schedule;

TEST_CASE("every generated schedule sends each neighbour its tensors in the order the neighbour receives them",
          "[schedule][message-order]") {
  // NCCL pairs sends and receives by order: a mismatch here would hand one microbatch's
  // tensor to another's op on a GPU pipeline.
  int checked = 0;
  for (const auto kind : stagecut::allScheduleKinds()) {
    for (int stages = 1; stages <= 6; ++stages) {
      for (int microbatches = 1; microbatches <= 12; ++microbatches) {
        for (int chunks = 1; chunks <= (stagecut::runsChunks(kind) ? 3 : 1); ++chunks) {
          Schedule schedule;
          try {
            schedule = generateSchedule(kind, stagecut::Placement{stages, chunks, stagecut::chunkStyle(kind)}, microbatches);
          } catch (const stagecut::Error&) {
            continue;  // a shape the schedule refuses (interleaved needs M a multiple of N)
          }
          INFO(schedule.name << " N=" << stages << " M=" << microbatches << " v=" << chunks);
          CHECK(firstMessageOrderMismatch(schedule) == std::nullopt);
          // With data-parallel replicas each pipeline's lists end in the all-reduce, no message.
          CHECK(firstMessageOrderMismatch(stagecut::withGradientAllReduce(schedule)) == std::nullopt);
          ++checked;
        }
      }
    }
  }
  CHECK(checked > 200);
}

TEST_CASE("a rank that runs two forwards out of its neighbour's order is named with both tensors",
          "[schedule][message-order]") {
  Schedule schedule = generateSchedule("gpipe", 3, 4);
  REQUIRE(firstMessageOrderMismatch(schedule) == std::nullopt);
  // Rank 1 runs F(2) before F(1): it still waits for rank 0's activations in 0, 2, 1, 3 order
  // while rank 0 sends 0, 1, 2, 3, and sends rank 2 its own in the swapped order.
  auto& ops = schedule.ranks[1];
  const auto f1 = std::find(ops.begin(), ops.end(), PipelineOp{OpKind::kForward, 1, 0});
  const auto f2 = std::find(ops.begin(), ops.end(), PipelineOp{OpKind::kForward, 2, 0});
  REQUIRE((f1 != ops.end() && f2 != ops.end()));
  std::iter_swap(f1, f2);
  const auto mismatch = firstMessageOrderMismatch(schedule);
  REQUIRE(mismatch.has_value());
  CHECK(*mismatch ==
        "rank 0 sends F(1)'s activation to rank 1 as its 2nd message to it, where rank 1's 2nd receive from "
        "rank 0 is F(2)'s activation");
}

TEST_CASE("a gradient a rank never receives is named", "[schedule][message-order]") {
  Schedule schedule = generateSchedule("1f1b", 2, 3);
  auto& ops = schedule.ranks[0];
  ops.erase(std::find(ops.begin(), ops.end(), PipelineOp{OpKind::kBackward, 2, 0}));
  const auto mismatch = firstMessageOrderMismatch(schedule);
  REQUIRE(mismatch.has_value());
  CHECK(*mismatch == "rank 1 sends B(2)'s input gradient to rank 0 as its 3rd message to it, which rank 0 never receives");
}
