// The microbatch planner against closed forms: equal stages under 1F1B and GPipe.
#include <cmath>

#include <catch2/catch.hpp>

#include "core/error.h"
#include "partitioner/chunked_partition.h"
#include "planner/microbatch_plan.h"
#include "planner/sized_profile.h"
#include "schedule/schedule_kind.h"
#include "planner/plan_json.h"
#include "tests/test_support.h"

using stagecut::MicrobatchPlan;
using stagecut::PlanRequest;
using stagecut::Profile;
using Catch::Matchers::WithinRel;

namespace {

// N identical layers, each costing forward a + c b and backward 2 (a + c b), activation 1 MiB per
// sample, 1000 parameters; measured at `sizes`.
Profile identicalLayers(int layers, double a, double c, const std::vector<int>& sizes) {
  return stagecut::testing::makeSizedProfile(layers, sizes, [a, c](stagecut::LayerCost& layer, int size) {
    layer.params = 1000;
    layer.param_bytes = 4000;
    layer.backward_input_ms.reset();
    layer.backward_weight_ms.reset();
    layer.output_shape.reset();
    layer.forward_ms = stagecut::TimeStatsMs::exactly(a + c * size);
    layer.backward_ms = stagecut::TimeStatsMs::exactly(2 * (a + c * size));
    layer.activation_bytes = (1u << 20) * static_cast<unsigned>(size);
    layer.output_bytes = 0;
  });
}

PlanRequest request(int stages, int global_batch, const std::string& schedule) {
  PlanRequest plan;
  plan.global_batch = global_batch;
  plan.partition.schedule = stagecut::parseScheduleName(schedule);
  plan.partition.placement = stagecut::schedulePlacement(plan.partition.schedule, stages);
  plan.partition.bytes_per_param = 16;
  return plan;
}

std::string rejection(const Profile& profile, const PlanRequest& plan) {
  try {
    stagecut::requireFeasibleRow(stagecut::planMicrobatches(profile, plan, "p.json"));
  } catch (const stagecut::Error& e) {
    CHECK(e.exitCode() == 2);
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("plan rows follow the closed form of balanced 1F1B and GPipe", "[planner][plan]") {
  // N stages of one layer each: step = (M + N - 1) x 3 (a + c b), with M = G / b.
  const int stages = 4, global = 64;
  for (const double a : {0.0, 2.0, 20.0}) {
    const Profile profile = identicalLayers(stages, a, 1.0, {1, 2, 4, 8, 16});
    for (const char* schedule : {"1f1b", "gpipe"}) {
      const MicrobatchPlan plan = stagecut::planMicrobatches(profile, request(stages, global, schedule), "p.json");
      REQUIRE(plan.rows.size() == 6u);  // 1, 2, 4, 8, 16, 32 (a line, twice 16); 64 skipped
      CHECK(plan.skipped.size() == 1u);
      int oracle_best = -1;
      double oracle_step = 0;
      for (std::size_t i = 0; i < plan.rows.size(); ++i) {
        const auto& row = plan.rows[i];
        const int b = row.microbatch_size;
        const int m = global / b;
        const double step = (m + stages - 1) * 3 * (a + 1.0 * b);
        CHECK(row.microbatches == m);
        CHECK_THAT(row.step_ms, WithinRel(step, 1e-9));
        CHECK_THAT(row.bubble, WithinRel(double(stages - 1) / (m + stages - 1), 1e-9));
        CHECK_THAT(row.samples_per_s, WithinRel(global / (step / 1000), 1e-9));
        // Stage 0 keeps GPipe M, 1F1B min(N, M) microbatches of 1 MiB x b; 1000 params x 16 B.
        const int in_flight = std::string(schedule) == "gpipe" ? m : std::min(stages, m);
        CHECK(row.peak_memory_bytes[0] == 16000u + static_cast<std::uint64_t>(in_flight) * b * (1u << 20));
        if (oracle_best < 0 || step < oracle_step) {
          oracle_best = static_cast<int>(i);
          oracle_step = step;
        }
      }
      CHECK(plan.best == oracle_best);
    }
  }
}

TEST_CASE("a fixed cost per microbatch moves the best size up", "[planner][plan]") {
  // With no fixed cost, the smallest microbatch (most microbatches, least bubble) wins; with a
  // large fixed cost per microbatch, fewer larger ones win.
  const auto best_size = [](double a) {
    const MicrobatchPlan plan =
        stagecut::planMicrobatches(identicalLayers(4, a, 1.0, {1, 2, 4, 8}), request(4, 32, "1f1b"), "p.json");
    return plan.rows[static_cast<std::size_t>(plan.best)].microbatch_size;
  };
  CHECK(best_size(0.0) == 1);
  CHECK(best_size(50.0) > 1);
}

TEST_CASE("rows over the memory cap are marked with the overflowing stage", "[planner][plan]") {
  const Profile profile = identicalLayers(4, 0.0, 1.0, {1, 2, 4, 8});
  PlanRequest plan_request = request(4, 32, "1f1b");
  // Stage 0 under 1F1B keeps min(4, M) x b MiB: b = 8 (M = 4) needs 32 MiB + state, b <= 4 at most 16 MiB.
  plan_request.partition.memory_cap_bytes = {20u << 20};
  const MicrobatchPlan plan = stagecut::planMicrobatches(profile, plan_request, "p.json");
  for (const auto& row : plan.rows) {
    CHECK(row.feasible == (row.microbatch_size <= 4));
    if (!row.feasible) {
      CHECK(row.overflow_stage == 0);
      CHECK(row.overflow_bytes == row.peak_memory_bytes[0] - (20u << 20));
    }
  }
  CHECK(plan.rows[static_cast<std::size_t>(plan.best)].feasible);
  const auto document = stagecut::planToJson(stagecut::planDocument(plan));
  CHECK(document["format"] == "stagecut.plan/1");
  CHECK(document["rows"][3]["feasible"] == false);
  CHECK(document["rows"][3]["overflow"]["stage"] == 0);
  CHECK(document["best"] == plan.best);

  plan_request.partition.memory_cap_bytes = {1u << 20};
  CHECK(rejection(profile, plan_request) ==
        "--memory-cap: no microbatch size fits; at the fastest row (microbatch 1, 32 microbatches) stage 0 needs "
        "4.02 MiB, 3.02 MiB over its cap; raise the cap, use more --stages or --recompute full");
}

TEST_CASE("plan rejects a global batch it cannot split and unknown schedules", "[planner][plan][errors]") {
  const Profile profile = identicalLayers(4, 1.0, 1.0, {4, 8});
  CHECK(rejection(profile, request(2, 0, "1f1b")) == "--global-batch 0: must be 1 or more samples per step");
  CHECK(rejection(profile, request(2, 30, "1f1b")) ==
        "--global-batch 30: no measured microbatch size (4, 8) divides it; use a global batch that one of them "
        "divides, or profile a size that divides 30");
  CHECK_THROWS_WITH(request(2, 32, "1f1"), "--schedule: unknown schedule '1f1', did you mean '1f1b'?");
  CHECK(rejection(profile, request(9, 32, "1f1b")) == "--stages 9: the profile has 4 layers; use --stages 4 or fewer");
  PlanRequest replicated = request(2, 30, "1f1b");
  replicated.partition.data_parallel = 3;
  CHECK(rejection(profile, replicated) ==
        "--global-batch 30: no measured microbatch size (4, 8) divides the 10 samples per replica; use a global "
        "batch that one of them divides, or profile a size that divides 10");
  replicated.global_batch = 32;
  CHECK(rejection(profile, replicated) ==
        "--global-batch 32: must split evenly over --data-parallel 3 replicas; use a multiple of 3");
}

TEST_CASE("the planned step charges recomputation's extra forward and the stage speed", "[planner][plan]") {
  const int stages = 4, global = 32;
  const Profile profile = identicalLayers(stages, 1.0, 1.0, {1, 2, 4, 8});
  const MicrobatchPlan plain = stagecut::planMicrobatches(profile, request(stages, global, "1f1b"), "p.json");
  PlanRequest recompute = request(stages, global, "1f1b");
  recompute.partition.recompute.mode = stagecut::RecomputePolicy::Mode::kFull;
  PlanRequest slow = request(stages, global, "1f1b");
  slow.partition.stage_speed = std::vector<double>(stages, 0.5);
  const MicrobatchPlan recomputed = stagecut::planMicrobatches(profile, recompute, "p.json");
  const MicrobatchPlan halved = stagecut::planMicrobatches(profile, slow, "p.json");
  REQUIRE(recomputed.rows.size() == plain.rows.size());
  for (std::size_t i = 0; i < plain.rows.size(); ++i) {
    const int b = plain.rows[i].microbatch_size;
    const int m = global / b;
    // F + (F + B) per microbatch and stage: (M + N - 1) x 4 (a + c b).
    CHECK_THAT(recomputed.rows[i].step_ms, WithinRel((m + stages - 1) * 4 * (1.0 + b), 1e-9));
    CHECK_THAT(halved.rows[i].step_ms, WithinRel(2 * plain.rows[i].step_ms, 1e-9));
    CHECK(recomputed.rows[i].peak_memory_bytes[0] < plain.rows[i].peak_memory_bytes[0]);
  }
}

TEST_CASE("interleaved rows need M a multiple of N, and a plan with no row is an error", "[planner][plan][errors]") {
  const Profile profile = identicalLayers(8, 1.0, 1.0, {1, 2, 4, 8});
  const MicrobatchPlan plan = stagecut::planMicrobatches(profile, request(4, 16, "interleaved-1f1b"), "p.json");
  std::vector<int> planned;
  for (const auto& row : plan.rows) planned.push_back(row.microbatch_size);
  CHECK(planned == std::vector<int>{1, 2, 4});  // M = 16, 8, 4; b = 8 gives M = 2
  REQUIRE(plan.skipped.size() == 2u);
  CHECK(plan.skipped[0].microbatch_size == 8);
  CHECK(plan.skipped[0].reason == "interleaved-1f1b needs the microbatches (2) a multiple of the 4 stages");
  CHECK(rejection(profile, request(4, 2, "interleaved-1f1b")) ==
        "--global-batch 2: no microbatch size can be planned (microbatch 1: interleaved-1f1b needs the "
        "microbatches (2) a multiple of the 4 stages; microbatch 2: interleaved-1f1b needs the microbatches (1) a "
        "multiple of the 4 stages); pick a global batch that a measured size divides into a whole number of "
        "microbatches the schedule can run");
}

TEST_CASE("a chunked schedule's rows are its own N x v chunking, and plan chooses v where none is given",
          "[planner][plan][chunks]") {
  // Uneven layers, so the best chunking is neither the N-stage split subdivided nor even.
  const Profile profile = stagecut::testing::makeSizedProfile(12, {1, 2, 4}, [](stagecut::LayerCost& layer, int size) {
    const double ms = (1.0 + size) * (1.0 + 0.37 * (layer.index % 5));
    layer.params = 1000;
    layer.param_bytes = 4000;
    layer.backward_input_ms.reset();
    layer.backward_weight_ms.reset();
    layer.output_shape.reset();
    layer.forward_ms = stagecut::TimeStatsMs::exactly(ms);
    layer.backward_ms = stagecut::TimeStatsMs::exactly(2 * ms);
    layer.activation_bytes = (1u << 20) * static_cast<unsigned>(size);
    layer.output_bytes = 0;
  });
  const stagecut::SizedProfile sized(profile, 0.1, "p.json");
  std::vector<MicrobatchPlan> fixed;  // v = 2, 3, 4 given
  for (int chunks : {2, 3, 4}) {
    PlanRequest given = request(2, 16, "interleaved-1f1b");
    given.partition.placement.chunks_per_rank = chunks;
    fixed.push_back(stagecut::planMicrobatches(profile, given, "p.json"));
    for (const stagecut::PlanRow& row : fixed.back().rows) {
      CHECK(row.placement.chunks_per_rank == chunks);
      CHECK(row.peak_memory_bytes.size() == 2u);  // per rank
      stagecut::PartitionOptions options = given.partition;
      options.microbatches = row.microbatches;
      const stagecut::Partition oracle = stagecut::partitionChunked(sized.at(row.microbatch_size), options, "p.json");
      CHECK(row.layers_per_stage == oracle.layersPerStage());
      CHECK(row.bottleneck_ms == oracle.bottleneck_ms);
    }
  }
  PlanRequest choosing = request(2, 16, "interleaved-1f1b");
  choosing.choose_chunks = true;
  const MicrobatchPlan chosen = stagecut::planMicrobatches(profile, choosing, "p.json");
  REQUIRE(chosen.rows.size() == fixed[0].rows.size());
  for (std::size_t i = 0; i < chosen.rows.size(); ++i) {
    std::size_t fastest = 0;  // the first v at the shortest step, as a tie keeps the smaller v
    for (std::size_t k = 1; k < fixed.size(); ++k) {
      if (fixed[k].rows[i].step_ms < fixed[fastest].rows[i].step_ms) fastest = k;
    }
    CHECK(chosen.rows[i].step_ms == fixed[fastest].rows[i].step_ms);
    CHECK(chosen.rows[i].placement == fixed[fastest].rows[i].placement);
    CHECK(chosen.rows[i].layers_per_stage == fixed[fastest].rows[i].layers_per_stage);
    CHECK(chosen.rows[i].layers_per_stage.size() == static_cast<std::size_t>(chosen.rows[i].placement.chunkCount()));
  }
  const MicrobatchPlan v_shaped = stagecut::planMicrobatches(profile, request(2, 16, "zb-v"), "p.json");
  for (const stagecut::PlanRow& row : v_shaped.rows) CHECK(row.layers_per_stage.size() == 4u);
  // A v that the options rule out is passed over when choosing, an error when given.
  PlanRequest many = request(4, 16, "interleaved-1f1b");  // 4 x 4 = 16 chunks, 12 layers
  many.choose_chunks = true;
  for (const stagecut::PlanRow& row : stagecut::planMicrobatches(profile, many, "p.json").rows) CHECK(row.placement.chunks_per_rank < 4);
  many.choose_chunks = false;
  many.partition.placement.chunks_per_rank = 4;
  CHECK(rejection(profile, many) == "--chunks 4: 4 ranks x 4 chunks need 16 layers, the profile has 12; use fewer --chunks");
}
