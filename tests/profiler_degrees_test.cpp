// profile --tensor-parallel 1,2: each degree measured in turn into one profile (format 3), held to
// the profiles the same degrees give one at a time.

#include <catch2/catch.hpp>

#include "core/parallel_degrees.h"
#include "core/profile_json.h"
#include "core/profile_shards.h"
#include "tests/test_support.h"

using stagecut::testing::CommandResult;
using stagecut::testing::kQuickProfileFlags;
using stagecut::testing::runStagecut;
using stagecut::testing::TempDir;

namespace {

const std::string kLlama = "profile --model llama --preset llama-tiny --microbatch 1,2" + kQuickProfileFlags;

}  // namespace

TEST_CASE("profile --tensor-parallel 1,2 holds each degree's shard as a profile at that degree alone holds it",
          "[profiler][cli][degrees]") {
  const TempDir dir;
  const CommandResult both = runStagecut(kLlama + " --tensor-parallel 1,2 -o " + dir.file("both.json"));
  REQUIRE(both.exit_code == 0);
  CHECK(both.err == "stagecut: tensor-parallel degree 1 (1 of 2)\nstagecut: tensor-parallel degree 2 (2 of 2)\n");
  CHECK_THAT(both.out, Catch::Matchers::Contains("per parallel degree (the table above is TP 1, CP 1)"));
  CHECK(dir.list() == std::vector<std::string>{"both.json"});  // no side file left
  REQUIRE(runStagecut(kLlama + " --tensor-parallel 2 -o " + dir.file("two.json")).exit_code == 0);

  const stagecut::Profile profile = stagecut::readProfileFile(dir.file("both.json"));
  const stagecut::Profile alone = stagecut::readProfileFile(dir.file("two.json"));
  REQUIRE(profile.shards.size() == 2);
  CHECK(stagecut::readParallelDegrees(profile.model.config, "p").tensor_parallel == 1);
  stagecut::ParallelDegrees two;
  two.tensor_parallel = 2;
  const stagecut::Profile shard = stagecut::shardProfile(profile, two, "both.json");
  REQUIRE(shard.layerCount() == alone.layerCount());
  for (std::size_t i = 0; i < shard.layerCount(); ++i) {
    INFO(shard.layers[i].name);
    // What does not depend on the clock is the single-degree profile's exactly.
    CHECK(shard.layers[i].params == alone.layers[i].params);
    CHECK(shard.layers[i].activation_bytes == alone.layers[i].activation_bytes);
    CHECK(shard.layers[i].tp_collectives == alone.layers[i].tp_collectives);
    CHECK(shard.microbatch_sizes.size() == 2);
  }
  // A block's shard holds about half its weights (the norms are whole on every rank).
  const std::uint64_t whole = profile.layers[1].params, half = shard.layers[1].params;
  CHECK(half < whole);
  CHECK(2 * half > whole);
  CHECK(shard.layers[1].tp_collectives.has_value());
  CHECK_FALSE(profile.layers[1].tp_collectives.has_value());
}

TEST_CASE("profile --tensor-parallel refuses a list before measuring any degree", "[profiler][cli][degrees][errors]") {
  const TempDir dir;
  const std::string out = " -o " + dir.file("p.json");
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"1,3", "stagecut: --tensor-parallel 3: does not divide --heads 4"},
      {"2,2", "stagecut: --tensor-parallel 2,2: degree 2 is listed twice; give each degree once"},
      {"0", "stagecut: --tensor-parallel 0: a tensor-parallel degree must be 1 or more, got 0"},
      {"1,", "stagecut: --tensor-parallel 1,: \"\" is not a tensor-parallel degree; give whole numbers from 1"},
  };
  for (const auto& [degrees, message] : refused) {
    const CommandResult result = runStagecut(kLlama + " --tensor-parallel " + degrees + out);
    INFO(degrees);
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.err, Catch::Matchers::StartsWith(message));
    CHECK(dir.list().empty());
  }
}

TEST_CASE("an interrupted profile of several degrees keeps each degree's samples and --resume finishes it",
          "[profiler][cli][degrees][resume]") {
  const TempDir dir;
  const std::string out = dir.file("p.json");
  const std::string command = kLlama + " --tensor-parallel 1,2 -o " + out;
  const CommandResult stopped = runStagecut(command, "STAGECUT_TEST_INTERRUPT_AFTER=3");
  CHECK(stopped.exit_code == 130);
  CHECK_THAT(stopped.err, Catch::Matchers::Contains("stopped by SIGINT (tensor-parallel degree 1) at microbatch size"));
  CHECK_THAT(stopped.err, Catch::Matchers::Contains("kept in " + out + ".tp1.resume.json"));
  CHECK(dir.list() == std::vector<std::string>{"p.json.tp1.resume.json"});
  const CommandResult resumed = runStagecut(command + " --resume");
  REQUIRE(resumed.exit_code == 0);
  CHECK_THAT(resumed.err, Catch::Matchers::Contains("resuming from " + out + ".tp1.resume.json"));
  CHECK(dir.list() == std::vector<std::string>{"p.json"});
  CHECK(stagecut::readProfileFile(out).shards.size() == 2);
}

TEST_CASE("a profile whose timed layers outgrow the host's memory stops naming the layer, not at the OOM killer",
          "[profiler][cli][memory]") {
  const TempDir dir;
  // A host with 1 KB left: the embedding fits (nothing is kept yet), the next layer does not.
  const CommandResult result = runStagecut("profile --model gpt --preset gpt-tiny --microbatch 1" + kQuickProfileFlags +
                                               " -o " + dir.file("p.json"),
                                           "STAGECUT_TEST_AVAILABLE_MEMORY_BYTES=1000");
  CHECK(result.exit_code == 1);
  CHECK_THAT(result.err, Catch::Matchers::StartsWith("stagecut: profile: the timed layers kept built so far hold "));
  CHECK_THAT(result.err, Catch::Matchers::Contains("left: too little to build layer 1 ("));
  CHECK(dir.list().empty());
  // With the host's real memory the same command runs.
  CHECK(runStagecut("profile --model gpt --preset gpt-tiny --microbatch 1" + kQuickProfileFlags + " -o " +
                    dir.file("p.json"))
            .exit_code == 0);
}
