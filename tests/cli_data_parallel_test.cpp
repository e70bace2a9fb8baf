// stagecut partition/compare --recompute and --data-parallel, and simulate --data-parallel and
// --ranks, run as a user runs them.
#include <fstream>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "core/json_document.h"
#include "tests/test_support.h"

using Catch::Matchers::Contains;
using stagecut::testing::CommandResult;
using stagecut::testing::checkInputError;
using stagecut::testing::runStagecut;
using stagecut::testing::TempDir;

using stagecut::testing::kExampleGptProfile;

namespace {


}  // namespace

TEST_CASE("partition --recompute: modes, a bare flag meaning full, and errors naming the kind",
          "[cli][partition][recompute]") {
  const CommandResult bare = runStagecut("partition '" + kExampleGptProfile + "' --stages 2 --recompute --json");
  REQUIRE(bare.exit_code == 0);
  const auto bare_json = nlohmann::json::parse(bare.out);
  CHECK(bare_json["stages"][0]["recompute"] == "full");
  CHECK(bare_json["stages"][1]["recompute"] == "full");
  const CommandResult selective =
      runStagecut("partition '" + kExampleGptProfile + "' --stages 2 --recompute selective:TransformerBlock --json");
  REQUIRE(selective.exit_code == 0);
  CHECK(nlohmann::json::parse(selective.out)["stages"][0]["recompute"] == "selective:TransformerBlock");
  const CommandResult none = runStagecut("partition '" + kExampleGptProfile + "' --stages 2 --recompute none --json");
  REQUIRE(none.exit_code == 0);
  CHECK_FALSE(nlohmann::json::parse(none.out)["stages"][0].contains("recompute"));

  checkInputError(runStagecut("partition '" + kExampleGptProfile + "' --stages 2 --recompute selective:TransformerBlok"),
                  "--recompute selective:TransformerBlok: the profile has no layer of kind "
                  "'TransformerBlok', did you mean 'TransformerBlock'?");
  checkInputError(runStagecut("partition '" + kExampleGptProfile + "' --stages 2 --recompute fll"),
                  "--recompute fll: unknown mode 'fll', did you mean 'full'? (selective takes layer "
                  "kinds: selective:CrossEntropyLoss)");
  checkInputError(runStagecut("partition '" + kExampleGptProfile + "' --stages 2 --data-parallel 0"),
                  "--data-parallel 0: use 1 to 4096 replicas");
}

TEST_CASE("partition --recompute auto recomputes only where the cap needs it, and says so",
          "[cli][partition][recompute]") {
  // Without recompute the best 3-stage split needs 143 MiB on its first stage, which keeps 3
  // microbatches under 1F1B; auto recomputes there and keeps the other stages plain.
  const CommandResult result =
      runStagecut("partition '" + kExampleGptProfile + "' --stages 3 --memory-cap 140MiB --recompute auto --json");
  REQUIRE(result.exit_code == 0);
  const auto document = nlohmann::json::parse(result.out);
  int recomputed = 0;
  for (const auto& stage : document["stages"]) {
    CHECK(stage["memory_bytes"].get<double>() <= 140.0 * 1024 * 1024);
    if (stage["recompute"] == "full") {
      ++recomputed;
      CHECK(stage["recompute_ms"].get<double>() > 0);
    } else {
      CHECK(stage["recompute"] == "none");
      CHECK(stage["recompute_ms"].get<double>() == 0);
    }
  }
  CHECK(document["stages"][0]["recompute"] == "full");
  CHECK(recomputed == 1);
  const CommandResult text =
      runStagecut("partition '" + kExampleGptProfile + "' --stages 3 --memory-cap 140MiB --recompute auto");
  REQUIRE(text.exit_code == 0);
  CHECK_THAT(text.out, Contains("memory without"));
  CHECK_THAT(text.out, Contains("recomputation saves"));
}

TEST_CASE("compare --recompute full shows memory saved against forward added per stage",
          "[cli][compare][recompute]") {
  const CommandResult result = runStagecut("compare '" + kExampleGptProfile + "' --stages 2 --recompute full");
  REQUIRE(result.exit_code == 0);
  CHECK_THAT(result.out, Contains("The compute split, per stage:"));
  CHECK_THAT(result.out, Contains("+fwd ms/mb"));
}

TEST_CASE("partition --data-parallel charges the embedding stage's exposed all-reduce",
          "[cli][partition][data-parallel]") {
  const CommandResult result = runStagecut("partition '" + kExampleGptProfile +
                                           "' --stages 2 --data-parallel 4 --dp-bandwidth 1GB/s --json");
  REQUIRE(result.exit_code == 0);
  const auto document = nlohmann::json::parse(result.out);
  const auto& stages = document["stages"];
  CHECK(stages[0]["allreduce_ms"].get<double>() > 0);
  // Stage 0 runs the step's last backward, so nothing hides its all-reduce; stage 1's overlaps
  // stage 0's last backward.
  CHECK(stages[0]["exposed_allreduce_ms"].get<double>() == Approx(stages[0]["allreduce_ms"].get<double>()));
  CHECK(stages[1]["exposed_allreduce_ms"].get<double>() < stages[1]["allreduce_ms"].get<double>());
}

TEST_CASE("simulate --data-parallel adds each rank's all-reduce after its last backward",
          "[cli][simulate][data-parallel]") {
  TempDir dir;
  const std::string part = dir.file("p.json");
  REQUIRE(runStagecut("partition '" + kExampleGptProfile + "' --stages 2 --microbatches 4 -o '" + part + "'").exit_code == 0);
  const CommandResult plain =
      runStagecut("simulate '" + kExampleGptProfile + "' --partition '" + part + "' --schedule 1f1b --json");
  const CommandResult replicated = runStagecut("simulate '" + kExampleGptProfile + "' --partition '" + part +
                                               "' --schedule 1f1b --data-parallel 4 --dp-bandwidth 1GB/s "
                                               "--json --trace '" + dir.file("t.json") + "'");
  REQUIRE(plain.exit_code == 0);
  REQUIRE(replicated.exit_code == 0);
  const auto before = nlohmann::json::parse(plain.out)["schedules"][0];
  const auto after = nlohmann::json::parse(replicated.out);
  CHECK(after["data_parallel"] == 4);
  const auto& run = after["schedules"][0];
  CHECK(run["step_time"].get<double>() >= before["step_time"].get<double>());
  CHECK(run["exposed_allreduce"].get<double>() ==
        Approx(run["step_time"].get<double>() - before["step_time"].get<double>()));
  CHECK(run["allreduce_time"][0].get<double>() > 0);
  CHECK_THAT(stagecut::readTextFile(dir.file("t.json")), Contains("\"cat\":\"allreduce\""));
  const CommandResult text = runStagecut("simulate '" + kExampleGptProfile + "' --partition '" + part +
                                         "' --schedule 1f1b --data-parallel 2 --width 80");
  REQUIRE(text.exit_code == 0);
  CHECK_THAT(text.out, Contains("all-reduce: A"));
  CHECK_THAT(text.out, Contains("exposed"));
  REQUIRE(runStagecut("simulate '" + kExampleGptProfile + "' --partition '" + part + "' --schedule 1f1b --data-parallel 2 --svg " +
                      dir.file("g.svg"))
              .exit_code == 0);
  CHECK_THAT(stagecut::readTextFile(dir.file("g.svg")), Contains("stages x 2 replicas, "));

  checkInputError(runStagecut("simulate --stages 4 --data-parallel 2"),
                  "--data-parallel 2: unit costs have no gradient bytes to all-reduce; give a "
                  "profile and a partition");
  checkInputError(runStagecut("simulate '" + kExampleGptProfile + "' --partition '" + part + "' --data-parallel 0"),
                  "--data-parallel 0: use 1 to 4096 replicas");
}

TEST_CASE("simulate --ranks 8 compares every N x D layout", "[cli][simulate][data-parallel]") {
  const CommandResult result =
      runStagecut("simulate '" + kExampleGptProfile + "' --ranks 8 --global-batch 256 --schedule 1f1b --json");
  REQUIRE(result.exit_code == 0);
  const auto document = nlohmann::json::parse(result.out);
  CHECK(document["format"] == "stagecut.simulation/1");
  const auto& rows = document["tradeoff"];
  REQUIRE(rows.size() == 4);  // 1x8, 2x4, 4x2, 8x1 (the profile has 11 layers)
  for (const auto& row : rows) {
    const int stages = row["stages"], replicas = row["replicas"], microbatches = row["microbatches"];
    CHECK(stages * replicas == 8);
    CHECK(microbatches * replicas * 4 == 256);  // microbatch size 4
    CHECK(row["layers_per_stage"].size() == static_cast<std::size_t>(stages));
    CHECK(row["samples_per_s"].get<double>() ==
          Approx(256.0 / row["step_time"].get<double>() * 1000.0));
    if (replicas == 1) CHECK(row["allreduce_time"].get<double>() == 0.0);
  }
  const CommandResult text = runStagecut("simulate '" + kExampleGptProfile + "' --ranks 8 --global-batch 256");
  REQUIRE(text.exit_code == 0);
  CHECK_THAT(text.out, Contains("samples/s"));

  checkInputError(runStagecut("simulate '" + kExampleGptProfile + "' --ranks 8 --global-batch 6"),
                  "--global-batch 6: no layout of 8 ranks splits it into whole microbatches of 4 "
                  "samples; use a multiple of 32 (ranks x microbatch size)");
  checkInputError(runStagecut("simulate --ranks 8"),
                  "--ranks 8: the trade-off splits a profile; use 'stagecut simulate PROFILE --ranks 8'");
  checkInputError(runStagecut("simulate '" + kExampleGptProfile + "' --ranks 0"),
                  "--ranks 0: use 1 to 4194304 ranks");
  checkInputError(runStagecut("simulate '" + kExampleGptProfile + "' --ranks 8 --global-batch 64 --microbatches 4"),
                  "--microbatches 4: --global-batch 64 sets the microbatches per replica; give one "
                  "of the two");
}

TEST_CASE("simulate takes each stage's recompute from the partition", "[cli][simulate][recompute]") {
  TempDir dir;
  const std::string plain = dir.file("plain.json"), full = dir.file("full.json");
  REQUIRE(runStagecut("partition '" + kExampleGptProfile + "' --stages 2 --microbatches 4 -o '" + plain + "'").exit_code == 0);
  REQUIRE(runStagecut("partition '" + kExampleGptProfile + "' --stages 2 --microbatches 4 --recompute full -o '" + full + "'")
              .exit_code == 0);
  const auto run = [&](const std::string& part) {
    const CommandResult result =
        runStagecut("simulate '" + kExampleGptProfile + "' --partition '" + part + "' --schedule gpipe --json");
    REQUIRE(result.exit_code == 0);
    return nlohmann::json::parse(result.out);
  };
  const auto without = run(plain), with = run(full);
  CHECK(with["stage_recompute"] == nlohmann::json({"full", "full"}));
  CHECK_FALSE(without.contains("stage_recompute"));
  // GPipe keeps all 4 microbatches: full recompute keeps each stage's input, not its activations.
  for (int s = 0; s < 2; ++s) {
    CHECK(with["schedules"][0]["peak_activation_bytes"][s].get<double>() <
          without["schedules"][0]["peak_activation_bytes"][s].get<double>());
  }
  CHECK(with["schedules"][0]["step_time"].get<double>() > without["schedules"][0]["step_time"].get<double>());
}

TEST_CASE("a cap that recomputation cannot meet does not suggest recomputation",
          "[cli][partition][recompute]") {
  checkInputError(runStagecut("partition '" + kExampleGptProfile + "' --stages 4 --memory-cap 90MiB --recompute auto"),
                  "--memory-cap: no split into 4 stages fits; the closest puts layers 9-10 on stage "
                  "3, 133 MiB, 42.5 MiB over its cap of 90.0 MiB; raise the cap, use more stages or a "
                  "smaller microbatch");
}

TEST_CASE("simulate --ranks with a memory cap leaves out the layouts no split fits",
          "[cli][simulate][data-parallel][recompute]") {
  const CommandResult result = runStagecut("simulate '" + kExampleGptProfile +
                                           "' --ranks 8 --global-batch 256 --schedule 1f1b "
                                           "--memory-cap 145MiB --recompute auto --json");
  REQUIRE(result.exit_code == 0);
  const auto document = nlohmann::json::parse(result.out);
  // The head and loss need 140 MiB on a stage of their own (recomputing them saves nothing: the
  // stage keeps one microbatch), so only the layouts that give them one fit: 4 x 2.
  REQUIRE(document["tradeoff"].size() == 1);
  CHECK(document["notes"].size() == 3);
  for (const auto& row : document["tradeoff"]) CHECK(row["peak_memory_bytes"].get<double>() <= 145.0 * 1024 * 1024);
  checkInputError(runStagecut("simulate '" + kExampleGptProfile + "' --ranks 8 --memory-cap 10MiB"),
                  "--memory-cap: no layout of 8 ranks fits; raise the cap, use more ranks, "
                  "--recompute auto or a smaller microbatch");
  checkInputError(runStagecut("simulate --stages 2 --recompute"),
                  "--recompute full: a partition file says which stages recompute; write it with "
                  "'stagecut partition ... --recompute full -o part.json' (or use --ranks)");
}
