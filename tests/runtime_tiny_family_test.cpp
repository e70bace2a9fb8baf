// docs/extending.md's recipe for a model family, followed: tests/tiny_family_zoo.cpp adds the
// family "resmlp" in one file with one registering line, compiled into stagecut_tiny_family (the
// stagecut-torch command line plus that file). Profiled, partitioned and validated (2 ranks over
// Gloo) as a built-in family is, without a line of the library changed for it.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "core/json_document.h"
#include "core/profile_json.h"
#include "tests/test_support.h"

using Catch::Matchers::Contains;
using stagecut::testing::CommandResult;
using stagecut::testing::TempDir;

namespace {

CommandResult runWithTinyFamily(const std::string& args) {
  return stagecut::testing::runProgram(STAGECUT_TINY_FAMILY_BINARY, args);
}

}  // namespace

TEST_CASE("a family added in one file is profiled, partitioned and validated like a built-in one",
          "[runtime][cli][family]") {
  const TempDir dir;
  // 5 identical blocks: the first, middle and last are timed, the other two take their figures.
  CommandResult result = runWithTinyFamily("profile --model resmlp --layers 5 --hidden 16 --microbatch 2 --seed 3" +
                                           stagecut::testing::kQuickProfileFlags + " -o " + dir.file("p.json"));
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  const stagecut::Profile profile = stagecut::readProfileFile(dir.file("p.json"));
  CHECK(profile.model.source == "zoo:resmlp");
  CHECK(profile.model.config == nlohmann::json{{"layers", 5}, {"hidden", 16}, {"seed", 3}});
  CHECK_THAT(profile.model.fingerprint, Catch::Matchers::StartsWith("sha256:"));
  std::vector<std::string> layers;
  for (const auto& layer : profile.layers) layers.push_back(layer.name + ":" + layer.kind);
  CHECK(layers == std::vector<std::string>{"embed:Linear", "block.0:ResidualTanh", "block.1:ResidualTanh",
                                           "block.2:ResidualTanh", "block.3:ResidualTanh", "block.4:ResidualTanh",
                                           "head:Linear", "loss:CrossEntropyLoss"});
  CHECK(profile.layers[2].times_from == std::vector<int>{1, 3, 5});
  CHECK_FALSE(profile.layers[3].times_from.has_value());
  CHECK(profile.layers[1].params == 16 * 16 + 16);
  CHECK(profile.layers[6].output_shape == std::vector<std::int64_t>{2, 4});

  // Partitioning needs no family: the profile is all it reads, so stagecut itself splits it.
  result = stagecut::testing::runStagecut("partition " + dir.file("p.json") +
                                          " --stages 2 --microbatches 4 --any-split -o " + dir.file("s.json"));
  REQUIRE(result.exit_code == 0);
  const nlohmann::json split = stagecut::parseJsonDocument(stagecut::readTextFile(dir.file("s.json")), "s.json");
  REQUIRE(split["stages"].size() == 2u);
  CHECK(split["stages"][0]["first"] == 0);
  CHECK(split["stages"][1]["first"].get<int>() == split["stages"][0]["last"].get<int>() + 1);
  CHECK(split["stages"][1]["last"] == 7);

  // validate rebuilds each stage's layers through the registry, in ranks that are this binary.
  result = runWithTinyFamily("validate " + dir.file("p.json") + " --partition " + dir.file("s.json") +
                             " --schedule 1f1b --microbatches 4 --steps 1 --json");
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  const nlohmann::json report = nlohmann::json::parse(result.out);
  CHECK(report["grad_check"] == "pass");
  CHECK(report["grad_max_rel_diff"].get<double>() < 1e-4);
  CHECK(report["ranks"].size() == 2u);
  CHECK(report["measured_step_ms"].get<double>() > 0);

  // The family is the registration's: stagecut without it names the families it has.
  stagecut::testing::checkInputError(
      stagecut::testing::runStagecut("validate " + dir.file("p.json") + " --partition " + dir.file("s.json")),
      dir.file("p.json") + ": model.config describes no model stagecut can build (--model resmlp: not a built-in "
                           "model; use one of: mlp, gpt, llama, vgg16); profile the model again");
}

TEST_CASE("an added family's flags, presets and help come from the registry", "[runtime][cli][family][errors]") {
  const CommandResult help = runWithTinyFamily("profile --help");
  REQUIRE(help.exit_code == 0);
  CHECK_THAT(help.out, Contains("Built-in model: mlp, gpt, llama, vgg16 or resmlp"));
  CHECK_THAT(help.out, Contains("Model width (mlp, gpt, llama, resmlp)"));
  const std::pair<std::string, std::string> cases[] = {
      {"--model resmlp --heads 2", "--heads: is a setting of --model gpt or llama, not of --model resmlp"},
      {"--model resmlp --preset gpt-tiny",
       "--preset gpt-tiny: --model resmlp has no presets (gpt and llama have them); size it with its own flags, or "
       "leave --preset out"},
      {"--model resmlp --tensor-parallel 2", "--tensor-parallel: --model resmlp has no tensor-parallel shards; gpt "
                                             "and llama have"},
      {"--model resmlp --layers 65", "--layers 65: at most 64 for a zoo model; choose a smaller size"},
      {"--model resmlq", "--model resmlq: not a built-in model, did you mean 'resmlp'?"},
  };
  for (const auto& [args, message] : cases) {
    INFO(args);
    stagecut::testing::checkInputError(runWithTinyFamily("profile " + args), message);
  }
}
