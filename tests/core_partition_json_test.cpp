#include <catch2/catch.hpp>

#include "core/error.h"
#include "core/json_document.h"
#include "core/partition_json.h"
#include "tests/test_support.h"

using stagecut::Error;
using stagecut::Partition;
using stagecut::partitionFromJson;
using stagecut::partitionToJson;
using stagecut::testing::makePartition;
using stagecut::testing::TempDir;
using nlohmann::json;

namespace {

std::string partitionRejection(const json& document) {
  return stagecut::testing::inputErrorOf([&] { partitionFromJson(document, "s.json"); });
}

}  // namespace

TEST_CASE("a partition survives write then read unchanged", "[core][partition]") {
  const TempDir dir;
  const Partition original = makePartition({4, 5, 5, 3});
  stagecut::writePartitionFile(dir.file("s.json"), original);
  const Partition back = stagecut::readPartitionFile(dir.file("s.json"));
  CHECK(back == original);
  CHECK(back.layersPerStage() == std::vector<int>{4, 5, 5, 3});
}

TEST_CASE("a split's per-stage recompute and all-reduce survive write, read and write byte for byte",
          "[core][partition]") {
  Partition original = makePartition({2, 3});
  original.stages[0].recompute = "selective:Attention";
  original.stages[0].recompute_ms = 1.25;
  original.stages[1].recompute = "none";
  original.stages[1].recompute_ms = 0.0;
  original.stages[1].allreduce_ms = 3.5;
  original.stages[1].exposed_allreduce_ms = 0.5;
  const stagecut::FrameworkOutputs outputs = {{"list", "2,3"}};
  const std::string text = stagecut::toJsonText(partitionToJson(original, outputs));
  const stagecut::PartitionDocument back = stagecut::partitionDocumentFromJson(json::parse(text), "s.json");
  CHECK(back.partition == original);
  CHECK(back.outputs == outputs);
  CHECK(stagecut::toJsonText(partitionToJson(back.partition, back.outputs)) == text);
  CHECK_FALSE(back.partition.stages[0].allreduce_ms.has_value());

  json wrong = partitionToJson(original);
  wrong["stages"][0]["recompute"] = 3;
  CHECK_THAT(partitionRejection(wrong), Catch::Matchers::StartsWith("s.json: stage 0: field \"recompute\" must be a string"));
  wrong["stages"][0]["recompute"] = "full";
  wrong["stages"][0]["recompute_ms"] = -1;
  CHECK_THAT(partitionRejection(wrong), Catch::Matchers::StartsWith("s.json: stage 0: field \"recompute_ms\""));
}

TEST_CASE("a comparison survives write, read and write byte for byte, recompute included",
          "[core][partition][comparison]") {
  Partition uniform = makePartition({3, 2});
  uniform.method = "uniform";
  Partition compute = makePartition({2, 3});
  compute.stages[1].recompute = "full";
  compute.stages[1].recompute_ms = 2.5;
  const stagecut::FrameworkOutputs outputs = {{"list", "2,3"}, {"deepspeed", "parts=[0, 2, 5]"}};
  const std::string fingerprint = "sha256:" + std::string(64, 'c');
  const std::string text =
      stagecut::toJsonText(stagecut::comparisonToJson({{{uniform, {}}, {compute, outputs}}, fingerprint, {}}));
  const stagecut::ComparisonDocument back = stagecut::comparisonFromJson(json::parse(text), "c.json");
  REQUIRE(back.splits.size() == 2);
  CHECK(back.splits[0].partition == uniform);
  CHECK(back.splits[1].partition == compute);
  CHECK(back.splits[1].outputs == outputs);
  CHECK(back.profile_fingerprint == fingerprint);
  CHECK(stagecut::toJsonText(stagecut::comparisonToJson(back)) == text);
  // Comparisons from before the fingerprint was recorded still read.
  json older = json::parse(text);
  older.erase("profile_fingerprint");
  CHECK(stagecut::comparisonFromJson(older, "c.json").profile_fingerprint.empty());
  CHECK_THROWS_WITH(stagecut::comparisonFromJson(json{{"format", stagecut::kComparisonFormat}}, "c.json"),
                    "c.json: field \"splits\" is missing or not a list");
}

TEST_CASE("a comparison's schedules, each on its own split or left out, read back as written",
          "[core][partition][comparison]") {
  Partition v_split = makePartition({1, 2, 2, 1});
  v_split.placement = stagecut::Placement{2, 2, stagecut::Placement::Style::kV};
  stagecut::ScheduleComparison zbv;
  zbv.schedule = "zb-v";
  zbv.placement = v_split.placement.value();
  zbv.split = stagecut::PartitionDocument{v_split, {{"torchtitan", "ZBVZeroBubble"}}};
  zbv.exact = true;
  zbv.step_ms = 120.5;
  zbv.bubble = 0.081;
  zbv.peak_bytes = 1.5e9;
  stagecut::ScheduleComparison left;
  left.schedule = "interleaved-1f1b";
  left.placement = stagecut::Placement::loop(2, 3);
  left.left_out = "6 chunks need more layers than the profile's 5";
  stagecut::ComparisonDocument comparison;
  comparison.splits = {{makePartition({3, 3}), {}}};
  comparison.schedules = {left, zbv};
  const std::string text = stagecut::toJsonText(stagecut::comparisonToJson(comparison));
  const stagecut::ComparisonDocument back = stagecut::comparisonFromJson(json::parse(text), "c.json");
  REQUIRE(back.schedules.size() == 2u);
  CHECK_FALSE(back.schedules[0].split);
  CHECK(back.schedules[0].left_out == left.left_out);
  REQUIRE(back.schedules[1].split);
  CHECK(back.schedules[1].split->partition == v_split);
  CHECK(back.schedules[1].step_ms == 120.5);
  CHECK(stagecut::toJsonText(stagecut::comparisonToJson(back)) == text);
  // Files from before the schedules were written have none; a split whose chunks per rank are
  // not the entry's, or an entry with neither a split nor a reason, is refused by name.
  json older = json::parse(text);
  older.erase("schedules");
  CHECK(stagecut::comparisonFromJson(older, "c.json").schedules.empty());
  json wrong = json::parse(text);
  wrong["schedules"][1]["chunks"] = 3;
  CHECK_THROWS_WITH(stagecut::comparisonFromJson(wrong, "c.json"),
                    Catch::Matchers::StartsWith("c.json schedules[1]: field \"chunks\" is 3 but its split places 2"));
  json silent = json::parse(text);
  silent["schedules"][0]["left_out"] = "";
  CHECK_THROWS_WITH(stagecut::comparisonFromJson(silent, "c.json"), Catch::Matchers::Contains("left_out"));
}

TEST_CASE("the partition reader rejects stages with a gap, an overlap or no layers",
          "[core][partition][errors]") {
  json document = partitionToJson(makePartition({2, 3, 2}));
  document["stages"][1]["first"] = 3;
  document["stages"][1]["last"] = 4;
  CHECK(partitionRejection(document) ==
        "s.json: stage 1: field \"first\" is 3, expected 2; stages must be contiguous, start at "
        "layer 0 and not overlap");

  document = partitionToJson(makePartition({2, 3, 2}));
  document["stages"][2]["first"] = 4;
  CHECK(partitionRejection(document) ==
        "s.json: stage 2: field \"first\" is 4, expected 5; stages must be contiguous, start at "
        "layer 0 and not overlap");

  document = partitionToJson(makePartition({2, 3, 2}));
  document["stages"][0]["last"] = 0;
  document["stages"][0]["first"] = 1;
  CHECK(partitionRejection(document) ==
        "s.json: stage 0: field \"last\" is 0, before \"first\" 1; every stage needs at least one "
        "layer");
}

TEST_CASE("the partition reader names missing and negative fields", "[core][partition][errors]") {
  for (const char* field : {"first", "last", "forward_ms", "backward_ms", "cost_ms", "params",
                            "memory_bytes"}) {
    json document = partitionToJson(makePartition({1, 1}));
    document["stages"][1].erase(field);
    CHECK(partitionRejection(document) ==
          std::string("s.json: stage 1: field \"") + field + "\" is missing; it is required");
  }
  json document = partitionToJson(makePartition({1, 1}));
  document["bottleneck_ms"] = -3;
  CHECK(partitionRejection(document) == "s.json: field \"bottleneck_ms\" must be >= 0, got -3");
  document = partitionToJson(makePartition({1, 1}));
  document["predicted_bubble"] = 1.5;
  CHECK(partitionRejection(document) ==
        "s.json: field \"predicted_bubble\" must be a fraction between 0 and 1, got 1.5");
  document = partitionToJson(makePartition({1, 1}));
  document["stages"] = json::array();
  CHECK(partitionRejection(document) ==
        "s.json: field \"stages\" is empty; a partition needs at least one stage");
  document = partitionToJson(makePartition({1, 1}));
  document["format"] = "stagecut.profile/1";
  CHECK(partitionRejection(document) ==
        "s.json: format \"stagecut.profile/1\" is not a partition this stagecut reads; expected "
        "\"stagecut.partition/1\"");
}

TEST_CASE("a partition must cover exactly the profile's layers", "[core][partition][errors]") {
  const Partition partition = makePartition({2, 3});
  CHECK_NOTHROW(stagecut::checkPartitionCoversLayers(partition, 5, "s.json"));
  CHECK_THROWS_WITH(stagecut::checkPartitionCoversLayers(partition, 7, "s.json"),
                    "s.json: the partition covers layers 0..4 but the profile has 7 layers; make "
                    "the partition from this profile");
}
