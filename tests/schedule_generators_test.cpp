#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "schedule/generators.h"

using stagecut::generateSchedule;
using stagecut::OpKind;
using stagecut::PipelineOp;
using stagecut::RankOps;
using stagecut::Schedule;

namespace Catch {
template <>
struct StringMaker<PipelineOp> {
  static std::string convert(const PipelineOp& op) {
    return stagecut::describeOp(op, stagecut::Placement::loop(1, op.chunk + 1));
  }
};
}  // namespace Catch

namespace {

// Most (microbatch, chunk) pairs alive at once on one rank, read off the list alone: a forward
// makes one alive, the op that ends its backward (B, or W where split off) frees it.
int peakInFlightOfList(const RankOps& ops, bool splits_backward) {
  const OpKind frees = splits_backward ? OpKind::kWeight : OpKind::kBackward;
  int alive = 0, peak = 0;
  for (const PipelineOp& op : ops) {
    if (op.kind == OpKind::kForward) peak = std::max(peak, ++alive);
    if (op.kind == frees) --alive;
  }
  return peak;
}

int forwardsBeforeFirst(const RankOps& ops, OpKind kind) {
  int count = 0;
  for (const PipelineOp& op : ops) {
    if (op.kind == kind) return count;
    if (op.kind == OpKind::kForward) ++count;
  }
  return count;
}

}  // namespace

TEST_CASE("every generator lists each op of each rank exactly once", "[schedule][generators]") {
  for (const std::string& name : stagecut::scheduleNames()) {
    for (int stages = 1; stages <= 8; ++stages) {
      for (int microbatches = 1; microbatches <= 16; ++microbatches) {
        const stagecut::ScheduleKind kind = stagecut::parseScheduleName(name);
        if (stagecut::needsMicrobatchesPerStageGroup(kind) && microbatches % stages != 0) continue;
        if (microbatches < stagecut::fewestMicrobatches(kind, stages)) continue;
        const int chunks =
            stagecut::schedulePlacement(kind, stages, stagecut::choosesChunks(kind) ? std::optional(3) : std::nullopt)
                .chunks_per_rank;
        INFO(name << " N = " << stages << " M = " << microbatches);
        const Schedule schedule = generateSchedule(name, stages, microbatches, chunks);
        CHECK_NOTHROW(stagecut::checkScheduleComplete(schedule));
        const bool splits = name == "zb-h1" || name == "zb-v" || name == "dualpipe-v";
        CHECK(schedule.opCount() ==
              static_cast<std::size_t>(splits ? 3 : 2) * stages * chunks * microbatches);
        CHECK(schedule.splits_backward == splits);
        CHECK(schedule.placement.chunks_per_rank == (name == "zb-v" || name == "dualpipe-v" ? 2 : name == "interleaved-1f1b" ? 3 : 1));
      }
    }
  }
}

TEST_CASE("GPipe runs every forward before any backward, the last microbatch first",
          "[schedule][generators]") {
  const Schedule gpipe = generateSchedule("gpipe", 4, 6);
  for (const RankOps& ops : gpipe.ranks) {
    REQUIRE(ops.size() == 12);
    for (int m = 0; m < 6; ++m) {
      CHECK(ops[m] == PipelineOp{OpKind::kForward, m, 0});
      CHECK(ops[6 + m] == PipelineOp{OpKind::kBackward, 5 - m, 0});
    }
    CHECK(peakInFlightOfList(ops, false) == 6);
  }
}

TEST_CASE("1F1B warms up with N - 1 - r forwards on rank r and keeps min(N - r, M) in flight",
          "[schedule][generators]") {
  for (int stages = 1; stages <= 16; ++stages) {
    for (int microbatches = 1; microbatches <= 64; microbatches += 3) {
      const Schedule schedule = generateSchedule("1f1b", stages, microbatches);
      for (int rank = 0; rank < stages; ++rank) {
        INFO("N = " << stages << " M = " << microbatches << " rank " << rank);
        const RankOps& ops = schedule.ranks[rank];
        // The warm-up, then the steady phase's first forward, come before the first backward.
        CHECK(forwardsBeforeFirst(ops, OpKind::kBackward) ==
              std::min(stages - rank, microbatches));
        CHECK(peakInFlightOfList(ops, false) == std::min(stages - rank, microbatches));
      }
    }
  }
  // The lesson's rank 1 of 4 with 8 microbatches: F0 F1, then F2 B0 ... F7 B5, then B6 B7.
  const Schedule lesson = generateSchedule("1f1b", 4, 8);
  const RankOps& rank1 = lesson.ranks[1];
  const std::vector<PipelineOp> expected = {
      {OpKind::kForward, 0, 0},  {OpKind::kForward, 1, 0},  {OpKind::kForward, 2, 0},
      {OpKind::kBackward, 0, 0}, {OpKind::kForward, 3, 0},  {OpKind::kBackward, 1, 0},
      {OpKind::kForward, 4, 0},  {OpKind::kBackward, 2, 0}, {OpKind::kForward, 5, 0},
      {OpKind::kBackward, 3, 0}, {OpKind::kForward, 6, 0},  {OpKind::kBackward, 4, 0},
      {OpKind::kForward, 7, 0},  {OpKind::kBackward, 5, 0}, {OpKind::kBackward, 6, 0},
      {OpKind::kBackward, 7, 0}};
  CHECK(rank1 == expected);
}

TEST_CASE("interleaved 1F1B sends groups of N microbatches through chunk 0, then chunk 1",
          "[schedule][generators]") {
  const Schedule schedule = generateSchedule("interleaved-1f1b", 4, 8, 2);
  CHECK(schedule.placement.chunks_per_rank == 2);
  CHECK(schedule.placement.chunkCount() == 8);
  CHECK(schedule.placement.chunkAt(1, 1) == 5);  // rank r holds model stages r and r + N
  std::vector<PipelineOp> forwards;
  for (const PipelineOp& op : schedule.ranks[0]) {
    if (op.kind == OpKind::kForward) forwards.push_back(op);
  }
  REQUIRE(forwards.size() == 16);
  for (int k = 0; k < 16; ++k) {
    INFO("forward " << k);
    CHECK(forwards[k].microbatch == k / 8 * 4 + k % 4);
    CHECK(forwards[k].chunk == k % 8 / 4);
  }
  // Megatron's warm-up on rank r: 2 (N - r - 1) + (v - 1) N forwards before the steady phase's.
  for (int rank = 0; rank < 4; ++rank) {
    CHECK(forwardsBeforeFirst(schedule.ranks[rank], OpKind::kBackward) == 2 * (3 - rank) + 4 + 1);
  }
}

TEST_CASE("interleaved 1F1B with one chunk is 1F1B", "[schedule][generators]") {
  CHECK(generateSchedule("interleaved-1f1b", 4, 8, 1).ranks ==
        generateSchedule("1f1b", 4, 8).ranks);
}

TEST_CASE("ZB-H1 defers the W of rank r's first r backwards and holds N microbatches at most",
          "[schedule][generators]") {
  for (int stages = 1; stages <= 8; ++stages) {
    const int microbatches = 3 * stages;
    const Schedule schedule = generateSchedule("zb-h1", stages, microbatches);
    for (int rank = 0; rank < stages; ++rank) {
      INFO("N = " << stages << " rank " << rank);
      const RankOps& ops = schedule.ranks[rank];
      int backwards_before_w = 0;
      for (const PipelineOp& op : ops) {
        if (op.kind == OpKind::kWeight) break;
        if (op.kind == OpKind::kBackward) ++backwards_before_w;
      }
      CHECK(backwards_before_w == rank + 1);
      // The deferred W's end the list: r + 1 W's after the last B.
      CHECK(ops.back().kind == OpKind::kWeight);
      const auto last_b = std::find_if(ops.rbegin(), ops.rend(), [](const PipelineOp& op) {
        return op.kind == OpKind::kBackward;
      });
      CHECK(std::distance(ops.rbegin(), last_b) == rank + 1);
      // 1F1B's rank 0 holds N; ZB-H1 keeps every rank within that.
      CHECK(peakInFlightOfList(ops, true) == stages);
    }
  }
}

TEST_CASE("ZB-V runs PyTorch's order: rank r holds model stages r and 2N - 1 - r, warms up with "
          "2(N - r) - 1 forwards of chunk 0, and keeps at most 2N chunk sets",
          "[schedule][generators]") {
  // Rank 0 of N = 2, M = 4, worked out from the order Qi et al. (2023, section 6) give and
  // PyTorch's ScheduleZBVZeroBubble plans: 3 F of chunk 0; no pairs; 2 x (F, B, W) of chunk 1;
  // the steady state; the cool-down's B then W.
  const Schedule small = generateSchedule("zb-v", 2, 4, 2);
  const auto op = [](OpKind kind, int microbatch, int chunk) { return PipelineOp{kind, microbatch, chunk}; };
  const OpKind F = OpKind::kForward, B = OpKind::kBackward, W = OpKind::kWeight;
  CHECK(small.ranks[0] == RankOps{op(F, 0, 0), op(F, 1, 0), op(F, 2, 0), op(F, 0, 1), op(B, 0, 1), op(W, 0, 1),
                                  op(F, 1, 1), op(B, 1, 1), op(W, 1, 1), op(F, 3, 0), op(B, 0, 0), op(W, 0, 0),
                                  op(F, 2, 1), op(B, 2, 1), op(W, 2, 1), op(B, 1, 0), op(W, 1, 0), op(F, 3, 1),
                                  op(B, 3, 1), op(W, 3, 1), op(B, 2, 0), op(W, 2, 0), op(B, 3, 0), op(W, 3, 0)});
  CHECK(small.placement.chunkAt(0, 1) == 3);
  CHECK(small.placement.chunkAt(1, 1) == 2);
  for (int stages = 1; stages <= 8; ++stages) {
    for (int microbatches = 1; microbatches <= 20; ++microbatches) {
      const Schedule schedule = generateSchedule("zb-v", stages, microbatches, 2);
      for (int rank = 0; rank < stages; ++rank) {
        INFO("N = " << stages << " M = " << microbatches << " rank " << rank);
        const RankOps& ops = schedule.ranks[rank];
        int leading = 0;
        while (leading < static_cast<int>(ops.size()) && ops[leading].kind == OpKind::kForward && ops[leading].chunk == 0) ++leading;
        CHECK(leading == std::min(2 * (stages - rank) - 1, microbatches));
        CHECK(peakInFlightOfList(ops, true) <= 2 * stages);
      }
    }
  }
}

TEST_CASE("DualPipeV runs PyTorch's ScheduleDualPipeV order on the V, a forward before each "
          "whole backward it overlaps, and every rank keeps 2N + 1 chunk sets",
          "[schedule][generators]") {
  // N = 2, M = 4, worked out by hand from the eight steps of PyTorch's
  // _calculate_single_rank_operations (DeepSeek's DualPipeV): rank 0 warms up with
  // 2(N - r - 1) = 2 forwards of chunk 0, r + 1 = 1 pair of forwards, N - r - 1 = 1 (B, W, F) of
  // chunk 1; then M - 2N + r + 1 = 1 step of F0 B1 F1 B0 (each B with its W), N - r - 1 = 1 of
  // B1 F1 B0, and the cool-down, whose last backward is split and its W run last.
  const Schedule small = generateSchedule("dualpipe-v", 2, 4, 2);
  const auto op = [](OpKind kind, int microbatch, int chunk) { return PipelineOp{kind, microbatch, chunk}; };
  const OpKind F = OpKind::kForward, B = OpKind::kBackward, W = OpKind::kWeight;
  CHECK(small.ranks[0] == RankOps{op(F, 0, 0), op(F, 1, 0), op(F, 2, 0), op(F, 0, 1), op(B, 0, 1), op(W, 0, 1),
                                  op(F, 1, 1), op(F, 3, 0), op(B, 1, 1), op(W, 1, 1), op(F, 2, 1), op(B, 0, 0),
                                  op(W, 0, 0), op(B, 2, 1), op(W, 2, 1), op(F, 3, 1), op(B, 1, 0), op(W, 1, 0),
                                  op(B, 3, 1), op(W, 3, 1), op(B, 2, 0), op(W, 2, 0), op(B, 3, 0), op(W, 3, 0)});
  // Rank 1 (odd) splits chunk 1's backward first in its last pair and runs both W at the end.
  CHECK(std::vector<PipelineOp>(small.ranks[1].end() - 4, small.ranks[1].end()) ==
        RankOps{op(B, 3, 1), op(B, 3, 0), op(W, 3, 1), op(W, 3, 0)});
  CHECK(small.placement == stagecut::Placement{2, 2, stagecut::Placement::Style::kV});
  for (int stages = 1; stages <= 8; ++stages) {
    for (int microbatches = 2 * stages; microbatches <= 2 * stages + 12; ++microbatches) {
      const Schedule schedule = generateSchedule("dualpipe-v", stages, microbatches, 2);
      for (int rank = 0; rank < stages; ++rank) {
        INFO("N = " << stages << " M = " << microbatches << " rank " << rank);
        CHECK(peakInFlightOfList(schedule.ranks[rank], true) == 2 * stages + 1);
      }
    }
  }
}

TEST_CASE("parseScheduleList expands all, keeps the order given and drops repeats",
          "[schedule][generators]") {
  using Names = std::vector<std::string>;
  const auto names = [](const std::string& list) {
    Names result;
    for (stagecut::ScheduleKind kind : stagecut::parseScheduleList(list)) result.push_back(stagecut::scheduleName(kind));
    return result;
  };
  CHECK(names("gpipe,1f1b") == Names{"gpipe", "1f1b"});
  CHECK(names("all") == Names{"gpipe", "1f1b", "interleaved-1f1b", "zb-h1", "zb-v", "dualpipe-v"});
  CHECK(names("zb-h1,all") == Names{"zb-h1", "gpipe", "1f1b", "interleaved-1f1b", "zb-v", "dualpipe-v"});
  CHECK(names("1f1b,,1f1b") == Names{"1f1b"});
}

TEST_CASE("generators reject shapes they cannot run with the flag and the fix",
          "[schedule][generators][errors]") {
  CHECK_THROWS_WITH(generateSchedule("1f1b", 0, 8), "--stages 0: a pipeline needs at least 1 stage");
  CHECK_THROWS_WITH(generateSchedule("gpipe", 4, 0),
                    "--microbatches 0: a step needs at least 1 microbatch");
  CHECK_THROWS_WITH(generateSchedule("interleaved-1f1b", 4, 8, 0),
                    "--chunks 0: each rank needs at least 1 model chunk");
  CHECK_THROWS_WITH(generateSchedule("interleaved-1f1b", 4, 6, 2),
                    "--microbatches 6: interleaved-1f1b needs a multiple of the pipeline's 4 stages; use 4 or 8");
  CHECK_THROWS_WITH(generateSchedule("interleaved-1f1b", 4, 3, 2),
                    "--microbatches 3: interleaved-1f1b needs a multiple of the pipeline's 4 stages; use 4");
  CHECK_THROWS_WITH(generateSchedule("gpipe", 4, 8, 2),
                    "--chunks 2: gpipe runs one model chunk per rank; add --schedule interleaved-1f1b");
  CHECK_THROWS_WITH(generateSchedule("zb-v", 4, 8, 3),
                    "--chunks 3: zb-v runs 2 model chunks per rank (a V); leave --chunks out");
  // A placement given whole is named as one: no --chunks the user never typed.
  CHECK_THROWS_WITH(generateSchedule(stagecut::ScheduleKind::kZeroBubbleV, stagecut::Placement::loop(4, 2), 8),
                    "--schedule zb-v: places 2 chunks on each rank in loop order; zb-v runs its chunks in a V; "
                    "use --schedule interleaved-1f1b");
  CHECK_THROWS_WITH(generateSchedule(stagecut::ScheduleKind::kDualPipeV, stagecut::Placement::loop(4, 1), 8),
                    "--schedule dualpipe-v: places one chunk on each rank; dualpipe-v runs 2 per rank in a V; "
                    "split for it with partition --schedule dualpipe-v");
  CHECK_THROWS_WITH(generateSchedule(stagecut::ScheduleKind::kOneFOneB, stagecut::Placement::loop(4, 3), 8),
                    "--schedule 1f1b: places 3 chunks on each rank in loop order; 1f1b runs one; "
                    "use --schedule interleaved-1f1b");
  CHECK_THROWS_WITH(generateSchedule("dualpipe-v", 4, 7, 2),
                    "--microbatches 7: dualpipe-v needs at least 2N = 8 microbatches on 4 stages (DualPipeV fills "
                    "both arms of the V before its steady state); use --microbatches 8 or more, or zb-v");
  CHECK_THROWS_WITH(generateSchedule("dualpipe-v", 4, 8, 3),
                    "--chunks 3: dualpipe-v runs 2 model chunks per rank (a V); leave --chunks out");
  CHECK_THROWS_WITH(generateSchedule("1f1", 4, 8),
                    "--schedule: unknown schedule '1f1', did you mean '1f1b'?");
  CHECK_THROWS_WITH(stagecut::parseScheduleList("gpipe,zb-h2"),
                    "--schedule: unknown schedule 'zb-h2', did you mean 'zb-h1'?");
  CHECK_THROWS_WITH(stagecut::parseScheduleList("pipedream"),
                    "--schedule: unknown schedule 'pipedream'; use one of: gpipe, 1f1b, "
                    "interleaved-1f1b, zb-h1, zb-v, dualpipe-v, all");
  CHECK_THROWS_WITH(stagecut::parseScheduleList(","),
                    "--schedule \",\": no schedule named; use e.g. --schedule gpipe,1f1b or "
                    "--schedule all");
  CHECK_THROWS_AS(generateSchedule("1f1b", -3, 8), stagecut::Error);
}

TEST_CASE("checkScheduleComplete names the rank and the op that is wrong",
          "[schedule][generators][errors]") {
  Schedule schedule = generateSchedule("1f1b", 2, 2);
  schedule.ranks[1].pop_back();
  CHECK_THROWS_WITH(stagecut::checkScheduleComplete(schedule),
                    "schedule '1f1b': rank 1: op B(1) is missing; every microbatch needs its F "
                    "and B on every chunk");
  schedule.ranks[1].push_back({OpKind::kBackward, 0, 0});
  CHECK_THROWS_WITH(stagecut::checkScheduleComplete(schedule),
                    "schedule '1f1b': rank 1: op B(0) appears twice; each op runs once");
  schedule.ranks[1].back() = {OpKind::kForward, 2, 0};
  CHECK_THROWS_WITH(stagecut::checkScheduleComplete(schedule),
                    "schedule '1f1b': rank 1: op F(2) is out of range; microbatches are 0..1 and "
                    "chunks 0..0");
  schedule.ranks[1].back() = {OpKind::kWeight, 1, 0};
  CHECK_THROWS_WITH(stagecut::checkScheduleComplete(schedule),
                    "schedule '1f1b': rank 1: op W(1) is a weight-gradient op in a schedule whose "
                    "backward is not split; set splits_backward or drop the W ops");
}
