#include <limits>
// stagecut.plan/1: plans of the example GPT and of a profile measured at several sizes written,
// read back and written again byte for byte; the reader's rejections.
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "core/json_document.h"
#include "core/profile_json.h"
#include "planner/microbatch_plan.h"
#include "planner/plan_json.h"
#include "tests/test_support.h"

using nlohmann::json;
using stagecut::PlanDocument;
using stagecut::PlanRequest;
using stagecut::Profile;

using stagecut::testing::kExampleGptProfile;

namespace {


PlanRequest request(int stages, int global_batch, stagecut::ScheduleKind schedule) {
  PlanRequest plan;
  plan.global_batch = global_batch;
  plan.partition.placement = stagecut::schedulePlacement(schedule, stages);
  plan.partition.schedule = schedule;
  return plan;
}

// Four layers measured at 1, 2, 4 and 8 samples; layer 2's forward bends at 8 (so its line is
// flagged), and 1 MiB of activations per sample makes the large sizes overflow a small cap.
Profile bendingProfile() {
  return stagecut::testing::makeSizedProfile(4, {1, 2, 4, 8}, [](stagecut::LayerCost& layer, int size) {
    const bool bends = layer.index == 2 && size == 8;
    layer.backward_input_ms.reset();
    layer.backward_weight_ms.reset();
    layer.output_shape.reset();
    layer.forward_ms = stagecut::TimeStatsMs::exactly(bends ? 30.0 : 1.0 + size);
    layer.backward_ms = stagecut::TimeStatsMs::exactly(2.0 * (1.0 + size));
    layer.activation_bytes = (1u << 20) * static_cast<unsigned>(size);
  });
}

std::string written(const PlanDocument& document) { return stagecut::toJsonText(stagecut::planToJson(document)); }

std::string rewritten(const std::string& text) {
  return written(stagecut::planFromJson(json::parse(text), "plan.json"));
}

std::string rejectionOf(const json& document) {
  return stagecut::testing::inputErrorOf([&] { stagecut::planFromJson(document, "plan.json"); });
}

}  // namespace

TEST_CASE("the example GPT's plan survives write, read and write byte for byte", "[planner][plan][json]") {
  const Profile profile = stagecut::readProfileFile(kExampleGptProfile);
  for (stagecut::ScheduleKind kind : stagecut::allScheduleKinds()) {
    const stagecut::MicrobatchPlan plan = stagecut::planMicrobatches(profile, request(2, 32, kind), "p.json");
    const std::string text = written(stagecut::planDocument(plan));
    INFO(stagecut::scheduleName(kind));
    CHECK(rewritten(text) == text);
  }
}

TEST_CASE("a plan with fitted rows, flagged lines, overflowing rows and no best survives write, read and write",
          "[planner][plan][json]") {
  PlanRequest capped = request(2, 32, stagecut::ScheduleKind::kOneFOneB);
  capped.partition.memory_cap_bytes = {12u << 20};
  const stagecut::MicrobatchPlan plan = stagecut::planMicrobatches(bendingProfile(), capped, "p.json");
  const PlanDocument original = stagecut::planDocument(plan);
  REQUIRE(original.best >= 0);
  REQUIRE_FALSE(original.skipped.empty());
  REQUIRE_FALSE(plan.flaggedLayers().empty());
  REQUIRE(original.rows.back().overflow_stage >= 0);
  const std::string text = written(original);
  CHECK(rewritten(text) == text);
  const PlanDocument back = stagecut::planFromJson(json::parse(text), "plan.json");
  CHECK(back.rows.back().overflow_bytes == original.rows.back().overflow_bytes);
  CHECK(back.fits[2].worstFit().residual == original.fits[2].worstFit().residual);

  capped.partition.memory_cap_bytes = {1u << 20};
  const PlanDocument none_fits = stagecut::planDocument(stagecut::planMicrobatches(bendingProfile(), capped, "p.json"));
  REQUIRE(none_fits.best == -1);
  const std::string unplanned = written(none_fits);
  CHECK(json::parse(unplanned)["best"].is_null());
  CHECK(rewritten(unplanned) == unplanned);
}

TEST_CASE("every plan document stagecut plan --json printed for the golden check reads back to the same bytes",
          "[planner][plan][json]") {
  const std::vector<std::string> printed = stagecut::testing::goldenDocuments("plan-");
  CHECK(printed.size() >= 4);
  for (const std::string& path : printed) {
    INFO(path);
    const std::string text = stagecut::readTextFile(path);
    CHECK(rewritten(text) == text);
  }
}

TEST_CASE("the plan reader names the source and the field it rejects", "[planner][plan][json][errors]") {
  PlanRequest capped = request(2, 32, stagecut::ScheduleKind::kOneFOneB);
  capped.partition.memory_cap_bytes = {12u << 20};
  const json plan = stagecut::planToJson(
      stagecut::planDocument(stagecut::planMicrobatches(bendingProfile(), capped, "p.json")));
  const std::size_t over = plan["rows"].size() - 1;  // the largest size overflows the cap

  CHECK(rejectionOf(json{{"format", "stagecut.simulation/1"}}) ==
        "plan.json: is a stagecut.simulation/1 document, not stagecut.plan/1; write one with "
        "'stagecut plan PROFILE --stages N --global-batch G -o FILE'");

  json document = plan;
  document.erase("fit_tolerance");
  CHECK(rejectionOf(document) == "plan.json: field \"fit_tolerance\" is missing; it is required");
  document = plan;
  document.erase("best");
  CHECK(rejectionOf(document) == "plan.json: field \"best\" is missing; it is required");
  document = plan;
  document["rows"][1].erase("samples_per_s");
  CHECK(rejectionOf(document) == "plan.json: row 1: field \"samples_per_s\" is missing; it is required");

  document = plan;
  document["rows"][0]["feasible"] = "yes";
  CHECK(rejectionOf(document) == "plan.json: row 0: field \"feasible\" must be true or false, got \"yes\"");
  document = plan;
  document["fits"][1]["forward_ms"]["slope"] = "steep";
  CHECK(rejectionOf(document) == "plan.json: fit 1: field \"forward_ms.slope\" must be a number, got \"steep\"");
  document = plan;
  document["rows"][0]["peak_memory_bytes"][1] = 1.5;
  CHECK(rejectionOf(document) ==
        "plan.json: row 0: field \"peak_memory_bytes[1]\" must be a whole number, got 1.5");
  document = plan;
  document["rows"][0]["chunks"] = 1;  // absent for one chunk per rank
  CHECK(rejectionOf(document) == "plan.json: row 0: field \"chunks\" must be between 2 and " +
                                     std::to_string(std::numeric_limits<int>::max() / plan["stages"].get<int>()) + ", got 1");
  document["rows"][0]["chunks"] = 2;  // then layers_per_stage lists stages x 2 chunks
  CHECK_THAT(rejectionOf(document), Catch::Matchers::Contains("row 0: field \"layers_per_stage\" has " +
                                                              std::to_string(plan["stages"].get<int>()) + " entries; expected " +
                                                              std::to_string(2 * plan["stages"].get<int>()) +
                                                              ", one per chunk, stages x chunks"));
  document = plan;
  document["skipped"] = "none";
  CHECK(rejectionOf(document) == "plan.json: field \"skipped\" must be an array, got \"none\"");

  document = plan;
  document["schedule"] = "1f1";
  CHECK(rejectionOf(document) ==
        "plan.json: field \"schedule\" is \"1f1\"; expected one of gpipe, 1f1b, interleaved-1f1b, zb-h1, zb-v, dualpipe-v");
  document = plan;
  document["rows"][0]["layers_per_stage"] = {4};
  CHECK(rejectionOf(document) ==
        "plan.json: row 0: field \"layers_per_stage\" has 1 entry; expected 2, one per stage");
  document = plan;
  document["rows"][over]["feasible"] = true;
  CHECK(rejectionOf(document) == "plan.json: row " + std::to_string(over) +
                                     ": field \"overflow\" is given on a feasible row; only a row over its "
                                     "memory cap has one");
  document = plan;
  document["best"] = static_cast<int>(plan["rows"].size());
  CHECK(rejectionOf(document) == "plan.json: field \"best\" must be between 0 and " + std::to_string(over) +
                                     ", got " + std::to_string(plan["rows"].size()));
  document = plan;
  document["rows"] = json::array();
  CHECK(rejectionOf(document) == "plan.json: field \"rows\" is empty; a plan has at least one planned microbatch size");
  document = plan;
  document["fits"].erase(0);
  CHECK(rejectionOf(document) ==
        "plan.json: fit 0: field \"index\" is 1, expected 0; the fits list every layer once, in order");
}
