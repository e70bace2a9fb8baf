// stagecut.simulation/1: written from the example GPT's predictions and from stagecut's own
// printed documents, read back, and written again byte for byte; the reader's rejections.
#include <string>
#include <variant>
#include <vector>

#include <catch2/catch.hpp>

#include "core/json_document.h"
#include "core/profile_json.h"
#include "partitioner/data_parallel_plan.h"
#include "partitioner/partition_options.h"
#include "partitioner/profile_partitioner.h"
#include "prediction/pipeline_prediction.h"
#include "prediction/simulation_json.h"
#include "schedule/closed_form.h"
#include "tests/test_support.h"

using nlohmann::json;
using stagecut::AnySimulationDocument;
using stagecut::SimulationDocument;
using stagecut::TradeoffDocument;

using stagecut::testing::kExampleGptProfile;

namespace {


// Every schedule on the example GPT's 4-stage compute split, the recomputing stages and the
// all-reduce of D = 2 replicas included: each optional part of the document is written.
SimulationDocument examplePipeline() {
  const stagecut::Profile profile = stagecut::readProfileFile(kExampleGptProfile);
  stagecut::PartitionOptions options;
  options.placement = stagecut::Placement::loop(4, 1);
  options.microbatches = 8;
  options.recompute.mode = stagecut::RecomputePolicy::Mode::kFull;
  options.data_parallel = 2;
  options.dp_bandwidth_bytes_per_s = 100e9;
  options.dp_latency_ms = 0.01;
  const stagecut::Partition partition =
      stagecut::partitionProfile(profile, options, "example-gpt.profile.json", stagecut::SplitMethod::kCompute);
  SimulationDocument document;
  document.unit_costs = false;
  document.profile_path = "example-gpt.profile.json";
  document.partition_path = "split.json";
  document.comm_text = "none";
  document.stages = options.placement.ranks;
  document.microbatches = options.microbatches;
  document.data_parallel = options.data_parallel;
  document.dp_text = "ring all-reduce over 2 replicas, 100GB/s, 10us per ring step";
  for (const stagecut::StageCost& stage : partition.stages) {
    document.stage_recompute.push_back(stage.recompute.value_or("none"));
  }
  for (stagecut::ScheduleKind kind : stagecut::allScheduleKinds()) {
    stagecut::PredictionOptions request = stagecut::predictionOptions(options);
    request.schedule = kind;
    request.placement = stagecut::schedulePlacement(kind, options.placement.ranks);
    const stagecut::PipelinePrediction prediction =
        stagecut::predictPipeline(profile, partition, request, "split.json");
    document.schedules.push_back(stagecut::simulatedScheduleFigures(
        prediction,
        stagecut::closedFormBubble(kind, *request.placement, options.microbatches, false),
        options.data_parallel));
  }
  document.notes.push_back("stages with \"recompute\" in the partition run their forward again");
  return document;
}

SimulationDocument unitCostLesson() {
  SimulationDocument document;
  document.stages = 4;
  document.microbatches = 8;
  for (stagecut::ScheduleKind kind : stagecut::allScheduleKinds()) {
    const stagecut::Placement placement = stagecut::schedulePlacement(kind, 4);
    document.schedules.push_back(stagecut::simulatedScheduleFigures(
        stagecut::predictUnitCosts(kind, placement, 8), stagecut::closedFormBubble(kind, placement, 8, true), 1));
  }
  return document;
}

// The trade-off of 16 ranks over the example GPT's 11 layers: N = 16 is left out with a note.
TradeoffDocument exampleTradeoff() {
  const stagecut::Profile profile = stagecut::readProfileFile(kExampleGptProfile);
  stagecut::TradeoffOptions options;
  options.ranks = 16;
  options.global_batch = 256;
  options.schedules = {stagecut::ScheduleKind::kOneFOneB, stagecut::ScheduleKind::kGpipe};
  options.dp_link.bandwidth_bytes_per_s = 100e9;
  options.dp_link.latency_ms = 0.01;
  TradeoffDocument document;
  document.profile_path = "example-gpt.profile.json";
  document.ranks = options.ranks;
  document.global_batch = options.global_batch;
  document.dp_text = "100GB/s, 10us per ring step";
  document.tradeoff = stagecut::dataParallelTradeoff(profile, options, "example-gpt.profile.json");
  return document;
}

std::string rewritten(const std::string& text) {
  const AnySimulationDocument back = stagecut::simulationFromJson(json::parse(text), "sim.json");
  if (const auto* pipeline = std::get_if<SimulationDocument>(&back)) {
    return stagecut::toJsonText(stagecut::simulationToJson(*pipeline));
  }
  return stagecut::toJsonText(stagecut::tradeoffToJson(std::get<TradeoffDocument>(back)));
}

std::string rejectionOf(const json& document) {
  return stagecut::testing::inputErrorOf([&] { stagecut::simulationFromJson(document, "sim.json"); });
}

}  // namespace

TEST_CASE("a simulated pipeline survives write, read and write byte for byte", "[prediction][simulation][json]") {
  const SimulationDocument profiled = examplePipeline();
  REQUIRE(profiled.schedules.size() == stagecut::allScheduleKinds().size());
  REQUIRE(profiled.schedules[0].exposed_allreduce_ms.has_value());
  const std::string text = stagecut::toJsonText(stagecut::simulationToJson(profiled));
  CHECK(rewritten(text) == text);
  const auto back = std::get<SimulationDocument>(stagecut::simulationFromJson(json::parse(text), "sim.json"));
  CHECK(back.stage_recompute == profiled.stage_recompute);
  CHECK(back.schedules[1].ranks[2].peak_activation_bytes == profiled.schedules[1].ranks[2].peak_activation_bytes);
  CHECK(back.schedules[3].ranks[0].allreduce_ms == profiled.schedules[3].ranks[0].allreduce_ms);

  const std::string lesson = stagecut::toJsonText(stagecut::simulationToJson(unitCostLesson()));
  CHECK(rewritten(lesson) == lesson);
}

TEST_CASE("the N x D trade-off survives write, read and write byte for byte", "[prediction][simulation][json]") {
  const TradeoffDocument original = exampleTradeoff();
  REQUIRE_FALSE(original.tradeoff.notes.empty());
  const std::string text = stagecut::toJsonText(stagecut::tradeoffToJson(original));
  CHECK(rewritten(text) == text);
  const auto back = std::get<TradeoffDocument>(stagecut::simulationFromJson(json::parse(text), "sim.json"));
  CHECK(back.tradeoff.rows.size() == original.tradeoff.rows.size());
  CHECK(back.tradeoff.rows.back().layers_per_stage == original.tradeoff.rows.back().layers_per_stage);
}

TEST_CASE("every simulation document stagecut simulate --json printed for the golden check reads back to the same bytes",
          "[prediction][simulation][json]") {
  const std::vector<std::string> printed = stagecut::testing::goldenDocuments("simulate-");
  CHECK(printed.size() >= 5);
  for (const std::string& path : printed) {
    INFO(path);
    const std::string text = stagecut::readTextFile(path);
    CHECK(rewritten(text) == text);
  }
}

TEST_CASE("the simulation reader names the source and the field it rejects", "[prediction][simulation][json][errors]") {
  const json pipeline = stagecut::simulationToJson(examplePipeline());
  const json tradeoff = stagecut::tradeoffToJson(exampleTradeoff());

  CHECK(rejectionOf(json{{"format", "stagecut.plan/1"}}) ==
        "sim.json: is a stagecut.plan/1 document, not stagecut.simulation/1; write one with "
        "'stagecut simulate ... --json > FILE'");

  json document = pipeline;
  document.erase("microbatches");
  CHECK(rejectionOf(document) == "sim.json: field \"microbatches\" is missing; it is required");
  document = pipeline;
  document["schedules"][2].erase("step_time");
  CHECK(rejectionOf(document) == "sim.json: schedule 2: field \"step_time\" is missing; it is required");
  document = tradeoff;
  document["tradeoff"][1].erase("recompute");
  CHECK(rejectionOf(document) == "sim.json: layout 1: field \"recompute\" is missing; it is required");

  document = pipeline;
  document["stages"] = "4";
  CHECK(rejectionOf(document) == "sim.json: field \"stages\" must be a whole number, got \"4\"");
  document = pipeline;
  document["schedules"][0]["busy_time"][3] = "fast";
  CHECK(rejectionOf(document) == "sim.json: schedule 0: field \"busy_time[3]\" must be a number, got \"fast\"");
  document = pipeline;
  document["schedules"][1]["peak_in_flight"] = 4;
  CHECK(rejectionOf(document) == "sim.json: schedule 1: field \"peak_in_flight\" must be an array, got 4");
  document = tradeoff;
  document["tradeoff"][0]["peak_memory_bytes"] = -1;
  CHECK(rejectionOf(document) == "sim.json: layout 0: field \"peak_memory_bytes\" must be >= 0, got -1");

  document = pipeline;
  document["costs"] = "unit";
  CHECK(rejectionOf(document) == "sim.json: field \"time_unit\" is \"ms\"; unit costs are in \"units\"");
  document = pipeline;
  document["schedules"][0]["idle_time"].erase(0);
  CHECK(rejectionOf(document) == "sim.json: schedule 0: field \"idle_time\" has 3 entries; expected 4, one per stage");
  document = pipeline;
  document["schedules"][3]["bubble"] = 1.5;
  CHECK(rejectionOf(document) == "sim.json: schedule 3: field \"bubble\" must be a fraction between 0 and 1, got 1.5");
  document = pipeline;
  document["schedules"][0].erase("exposed_allreduce");
  CHECK(rejectionOf(document) == "sim.json: schedule 0: field \"exposed_allreduce\" is missing; it is required");
  document = tradeoff;
  document["tradeoff"][0]["replicas"] = 3;
  CHECK(rejectionOf(document) ==
        "sim.json: layout 0: field \"replicas\" is 3; \"stages\" x \"replicas\" must be the document's 16 ranks, got 1 x 3");
}
