// `stagecut plan` as a user runs it: table, JSON, file, and one-line errors.
#include <catch2/catch.hpp>

#include "core/json_document.h"
#include "core/profile_json.h"
#include "tests/test_support.h"

using stagecut::testing::CommandResult;
using stagecut::testing::checkInputError;
using stagecut::testing::runStagecut;
using stagecut::testing::TempDir;
using Catch::Matchers::Contains;

namespace {

// Six layers measured at 2, 4 and 8 samples; costs a + c b with a fixed part per layer.
stagecut::Profile sizedProfile() {
  return stagecut::testing::makeSizedProfile(6, {2, 4, 8}, [](stagecut::LayerCost& layer, int size) {
    const double forward = 3.0 + layer.index + 0.5 * size;
    layer.forward_ms = stagecut::TimeStatsMs::exactly(forward);
    layer.backward_ms = stagecut::TimeStatsMs::exactly(2 * forward);
    layer.activation_bytes = (1u << 20) * static_cast<unsigned>(size);
  });
}

}  // namespace

TEST_CASE("stagecut plan prints a row per microbatch size and marks the best", "[cli][plan]") {
  const TempDir dir;
  stagecut::writeProfileFile(dir.file("p.json"), sizedProfile());
  const CommandResult result =
      runStagecut("plan " + dir.file("p.json") + " --stages 3 --global-batch 24 -o " + dir.file("plan.json"));
  REQUIRE(result.exit_code == 0);
  CHECK(result.err.empty());
  CHECK_THAT(result.out, Contains("3 stages, global batch 24, 1f1b; measured at microbatch 2,4,8"));
  CHECK_THAT(result.out, Contains("peak memory per stage"));
  CHECK_THAT(result.out, Contains("fitted"));  // b = 1, 3, 6, 12: from the lines
  CHECK_THAT(result.out, Contains("not planned: microbatch 24 (beyond twice the largest measured size (8))"));
  CHECK_THAT(result.out, Contains("best: microbatch "));
  const auto document = nlohmann::json::parse(stagecut::readTextFile(dir.file("plan.json")));
  CHECK(document["format"] == "stagecut.plan/1");
  REQUIRE(document["rows"].size() == 7u);  // 1, 2, 3, 4, 6, 8, 12
  const int best = document["best"].get<int>();
  for (const auto& row : document["rows"]) {
    CHECK(row["predicted_step_ms"].get<double>() >= document["rows"][best]["predicted_step_ms"].get<double>());
    CHECK(row["peak_memory_bytes"].size() == 3u);
  }
  CHECK(dir.list() == std::vector<std::string>{"p.json", "plan.json"});

  const CommandResult json = runStagecut("plan " + dir.file("p.json") + " --stages 3 --global-batch 24 --json");
  REQUIRE(json.exit_code == 0);
  CHECK(nlohmann::json::parse(json.out) == document);
}

TEST_CASE("stagecut plan chooses v for interleaved 1F1B unless --chunks fixes it, and says so", "[cli][plan][chunks]") {
  const TempDir dir;
  stagecut::writeProfileFile(dir.file("p.json"), sizedProfile());
  const CommandResult chosen = runStagecut("plan " + dir.file("p.json") +
                                           " --stages 2 --global-batch 16 --schedule interleaved-1f1b --json");
  REQUIRE(chosen.exit_code == 0);
  const auto document = nlohmann::json::parse(chosen.out);
  for (const auto& row : document["rows"]) {
    const int chunks = row["chunks"].get<int>();
    CHECK((chunks == 2 || chunks == 3));  // 6 layers: v = 4 needs 8 chunks
    CHECK(row["layers_per_stage"].size() == static_cast<std::size_t>(2 * chunks));
    CHECK(row["peak_memory_bytes"].size() == 2u);
  }
  const CommandResult text = runStagecut("plan " + dir.file("p.json") +
                                         " --stages 2 --global-batch 16 --schedule interleaved-1f1b");
  REQUIRE(text.exit_code == 0);
  CHECK_THAT(text.out, Contains("interleaved-1f1b (v = 2, 3, 4 chunks per rank tried at each size, the fastest kept)"));
  CHECK_THAT(text.out, Contains("layers per chunk"));
  CHECK_THAT(text.out, Contains("peak memory per rank"));
  const CommandResult fixed = runStagecut("plan " + dir.file("p.json") +
                                          " --stages 2 --global-batch 16 --schedule interleaved-1f1b --chunks 3 --json");
  REQUIRE(fixed.exit_code == 0);
  const auto fixed_document = nlohmann::json::parse(fixed.out);
  for (const auto& row : fixed_document["rows"]) CHECK(row["chunks"] == 3);
  checkInputError(runStagecut("plan " + dir.file("p.json") +
                              " --stages 2 --global-batch 16 --schedule interleaved-1f1b --chunks 4"),
                  "--chunks 4: 2 ranks x 4 chunks need 8 layers, the profile has 6; use fewer --chunks");
}

TEST_CASE("stagecut plan prices a tensor-parallel profile's collectives at every size with --tp-bandwidth",
          "[cli][plan][tensor-parallel]") {
  const TempDir dir;
  stagecut::Profile profile = sizedProfile();
  profile.model.config["tensor_parallel"] = 2;
  for (auto& size : profile.microbatch_sizes) {
    for (auto& layer : size.layers) {
      layer.tp_collectives = stagecut::LayerCost::TensorParallelCollectives{2, 2, 1000000u * static_cast<unsigned>(size.microbatch_size)};
    }
  }
  for (const auto& size : profile.microbatch_sizes) {
    if (size.microbatch_size == profile.run.microbatch_size) profile.layers = size.layers;
  }
  stagecut::writeProfileFile(dir.file("p.json"), profile);
  const std::string plan = "plan " + dir.file("p.json") + " --stages 3 --global-batch 24";
  const CommandResult unpriced = runStagecut(plan + " --json");
  const CommandResult priced = runStagecut(plan + " --tp-bandwidth 1GB/s --tp-latency 10us --json");
  INFO(unpriced.err << priced.err);
  REQUIRE(unpriced.exit_code == 0);
  REQUIRE(priced.exit_code == 0);
  const auto before = nlohmann::json::parse(unpriced.out)["rows"];
  const auto after = nlohmann::json::parse(priced.out)["rows"];
  REQUIRE(before.size() == after.size());
  // Each microbatch of each size pays its collectives: every row's step grows.
  for (std::size_t r = 0; r < before.size(); ++r) {
    CHECK(after[r]["predicted_step_ms"].get<double>() > before[r]["predicted_step_ms"].get<double>());
  }
  const CommandResult text = runStagecut(plan + " --tp-bandwidth 1GB/s --tp-latency 10us");
  CHECK_THAT(text.out, Contains("tensor parallel 2: each layer is one rank's shard; its collectives priced at"));
  CHECK_THAT(runStagecut(plan).out, Contains("its collectives are not priced (give --tp-bandwidth"));
  // Without the degree there is nothing to price.
  stagecut::writeProfileFile(dir.file("plain.json"), sizedProfile());
  checkInputError(runStagecut("plan " + dir.file("plain.json") + " --stages 3 --global-batch 24 --tp-bandwidth 1GB/s"),
                  "--tp-bandwidth: " + dir.file("plain.json") +
                      " was not profiled with --tensor-parallel; its layers have no collectives to price");
}

TEST_CASE("stagecut plan errors are one line with exit 2", "[cli][plan][errors]") {
  const TempDir dir;
  stagecut::writeProfileFile(dir.file("p.json"), sizedProfile());
  const std::string p = dir.file("p.json");
  checkInputError(runStagecut("plan " + p + " --stages 3 --global-batch 25"),
                    "--global-batch 25: no measured microbatch size (2, 4, 8) divides it; use a global batch "
                    "that one of them divides, or profile a size that divides 25");
  checkInputError(runStagecut("plan " + p + " --stages 3 --global-batch 16 --memory-cap 1MiB"),
                    "--memory-cap: no microbatch size fits; at the fastest row (microbatch 8, 2 microbatches) stage 1 "
                    "needs 32.1 MiB, 31.1 MiB over its cap; raise the cap, use more --stages or --recompute full");
  // A batch no size fits says, for each measured size, why not: here too many microbatches.
  checkInputError(runStagecut("plan " + p + " --stages 3 --global-batch 2000000000"),
                  "--global-batch 2000000000: no microbatch size can be planned (microbatch 2, 4 and 8: G / b "
                  "microbatches x 3 stages is over the 4.2M forward ops one simulated step holds; microbatch 20: "
                  "beyond twice the largest measured size (8)); use a --global-batch of at most 11184808 (1398101 "
                  "microbatches of 8) that a measured size divides");
  // 1398101 microbatches of 8 on 3 stages is within the limit: the largest batch it names plans.
  CHECK(runStagecut("plan " + p + " --stages 3 --global-batch 11184808 --json").exit_code == 0);
  checkInputError(runStagecut("plan " + p + " --stages 3 --global-batch 2000000000 --data-parallel 4"),
                  "--global-batch 2000000000: no microbatch size can be planned (microbatch 2, 4 and 8: G / b "
                  "microbatches x 3 stages is over the 4.2M forward ops one simulated step holds; microbatch 20: "
                  "beyond twice the largest measured size (8)); use a --global-batch of at most 44739232 (1398101 "
                  "microbatches of 8 per replica) that a measured size divides");
  checkInputError(runStagecut("plan " + p + " --stages 3 --global-batch 16 --schedule zb-h2"),
                    "--schedule: unknown schedule 'zb-h2', did you mean 'zb-h1'?");
  checkInputError(runStagecut("plan " + p + " --stages 3 --global-batch 16 --fit-tolerance -1"),
                    "--fit-tolerance -1: must be a finite number of relative residual from 0 to 1e+06");
  const CommandResult no_batch = runStagecut("plan " + p + " --stages 3");
  CHECK(no_batch.exit_code == 2);
  CHECK_THAT(no_batch.err, Contains("--global-batch"));
  const CommandResult microbatches = runStagecut("plan " + p + " --stages 3 --global-batch 16 --microbatches 4");
  CHECK(microbatches.exit_code == 2);
  CHECK_THAT(microbatches.err, Contains("--microbatches"));
}

TEST_CASE("stagecut plan on a one-size profile plans that size and says how to plan more", "[cli][plan]") {
  const TempDir dir;
  stagecut::writeProfileFile(dir.file("p.json"), stagecut::testing::makeProfile(4));  // size 4 only
  const CommandResult result = runStagecut("plan " + dir.file("p.json") + " --stages 2 --global-batch 16");
  REQUIRE(result.exit_code == 0);
  CHECK_THAT(result.out, Contains("the profile has one microbatch size; profile with --microbatch 1,2,4,8"));
  CHECK_THAT(result.out, Contains("best: microbatch 4 x 4 microbatches"));
}

TEST_CASE("partition, compare and simulate take one size of a multi-size profile", "[cli][plan]") {
  const TempDir dir;
  const stagecut::Profile profile = sizedProfile();
  stagecut::writeProfileFile(dir.file("p.json"), profile);
  const std::string p = dir.file("p.json");
  // At size 2 every layer costs 3 + i + 1 ms forward; the JSON's stage sums say which size was used.
  const CommandResult at2 = runStagecut("partition " + p + " --stages 2 --microbatch-size 2 --format json");
  REQUIRE(at2.exit_code == 0);
  const auto split = nlohmann::json::parse(at2.out);
  double forward = 0;
  for (const auto& stage : split["stages"]) forward += stage["forward_ms"].get<double>();
  CHECK(forward == Approx(6 * 4.0 + 15));  // sum over i of (3 + i + 0.5 x 2)
  CHECK(runStagecut("compare " + p + " --stages 2 --microbatch-size 4").exit_code == 0);
  checkInputError(runStagecut("partition " + p + " --stages 2 --microbatch-size 3"),
                    p + ": microbatch size 3 was not measured; the profile has sizes 2,4,8 (add it with profile "
                        "--microbatch)");
  checkInputError(runStagecut("simulate " + p + " --partition " + p + " --microbatch-size 16"),
                    p + ": microbatch size 16 was not measured; the profile has sizes 2,4,8 (add it with profile "
                        "--microbatch)");
}

TEST_CASE("stagecut plan -o onto its profile is refused and the profile kept byte for byte",
          "[cli][plan][output][errors]") {
  const TempDir dir;
  stagecut::writeProfileFile(dir.file("p.json"), sizedProfile());
  const std::string profile = dir.file("p.json");
  const std::string before = stagecut::readTextFile(profile);
  checkInputError(runStagecut("plan '" + profile + "' --stages 2 --global-batch 16 -o '" + profile + "'"),
                  "-o " + profile + ": that is the input profile " + profile + "; write to another file");
  CHECK(stagecut::readTextFile(profile) == before);
  CHECK(dir.list() == std::vector<std::string>{"p.json"});
}
