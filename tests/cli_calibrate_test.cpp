#include <catch2/catch.hpp>

#include "core/json_document.h"
#include "core/profile_json.h"
#include "tests/report_fixtures.h"
#include "tests/test_support.h"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using stagecut::testing::CommandResult;
using stagecut::testing::runStagecut;
using stagecut::testing::TempDir;

using stagecut::testing::kExampleGptProfile;

namespace {


// The fixtures' runs, at the sample profile's microbatch size.
nlohmann::json ofProfileSize(nlohmann::json run) {
  run["microbatch_size"] = stagecut::readProfileFile(kExampleGptProfile).run.microbatch_size;
  return run;
}

}  // namespace

TEST_CASE("calibrate writes a profile fitted to validate's runs and prints each run before and after", "[cli][calibrate]") {
  const TempDir dir;
  dir.write("compute.json", ofProfileSize(stagecut::testing::exampleComputeValidation()).dump());
  dir.write("params.json", ofProfileSize(stagecut::testing::exampleParamsValidation()).dump());
  const CommandResult result = runStagecut("calibrate '" + kExampleGptProfile + "' --validation '" + dir.file("compute.json") +
                                           "' --check '" + dir.file("params.json") + "' -o '" + dir.file("cal.json") + "'");
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  CHECK(result.err.empty());
  CHECK_THAT(result.out, Contains("TransformerBlock"));
  CHECK_THAT(result.out, Contains("fitted"));
  CHECK_THAT(result.out, Contains("held out"));
  CHECK_THAT(result.out, Contains("wrote " + dir.file("cal.json")));
  const stagecut::Profile calibrated = stagecut::readProfileFile(dir.file("cal.json"));
  REQUIRE(calibrated.calibration.has_value());
  CHECK(calibrated.calibration->runs.size() == 2);
  CHECK(calibrated.calibration->uncalibrated_fingerprint == stagecut::readProfileFingerprint(kExampleGptProfile));
  REQUIRE(calibrated.layers[1].uncalibrated.has_value());
  // The other commands take it as any profile.
  CHECK(runStagecut("partition '" + dir.file("cal.json") + "' --stages 2").exit_code == 0);
  CHECK(runStagecut("inspect '" + dir.file("cal.json") + "'").exit_code == 0);
  // A run of the uncalibrated profile also fits the calibrated one: it is refitted from its measured times.
  const CommandResult again = runStagecut("calibrate '" + dir.file("cal.json") + "' --validation '" +
                                          dir.file("compute.json") + "' -o '" + dir.file("cal2.json") + "'");
  REQUIRE(again.exit_code == 0);
  CHECK_THAT(again.out, Contains("refitted from its uncalibrated times"));
}

TEST_CASE("calibrate holds a factor beyond its box at the bound and says so", "[cli][calibrate]") {
  // A run whose every op took 20 times its profile: the blocks, most of each op, end at the upper
  // bound, 10; the other kinds take up what the box leaves.
  nlohmann::json slow = ofProfileSize(stagecut::testing::exampleComputeValidation());
  for (auto& rank : slow["timeline"]["measured"]) {
    for (auto& op : rank) {
      op[2] = op[2].get<double>() * 20;
      op[3] = op[3].get<double>() * 20;
    }
  }
  // The step, its list and the error follow the timeline, as validate writes them.
  slow["measured_step_ms"] = slow["measured_step_ms"].get<double>() * 20;
  for (auto& step : slow["measured_steps_ms"]) step = step.get<double>() * 20;
  slow["error"] = slow["measured_step_ms"].get<double>() / slow["predicted_step_ms"].get<double>() - 1;
  const TempDir dir;
  dir.write("slow.json", slow.dump());
  const CommandResult result = runStagecut("calibrate '" + kExampleGptProfile + "' --validation '" +
                                           dir.file("slow.json") + "' -o '" + dir.file("cal.json") + "'");
  INFO(result.out << result.err);
  REQUIRE(result.exit_code == 0);
  CHECK_THAT(result.out, Contains("8 ops, at bound"));
  CHECK_THAT(result.out, Contains("note: TransformerBlock's F (forward_ms) factor is held at 10, the fit's upper "
                                  "bound (factors stay in 0.1-10): its 8 ops alone put it higher."));
  CHECK_THAT(result.out, Contains("note: TransformerBlock's B (backward_ms) factor is held at 10"));
  const stagecut::Profile calibrated = stagecut::readProfileFile(dir.file("cal.json"));
  for (const auto& factor : calibrated.calibration->factors) {
    INFO(factor.kind << " " << factor.op);
    CHECK(factor.at_bound == (factor.kind == "TransformerBlock"));
    CHECK(factor.factor <= 10.0);
    if (factor.at_bound) CHECK(factor.factor == 10.0);
  }
}

TEST_CASE("calibrate errors name the input and the fix, exit 2", "[cli][calibrate][errors]") {
  const TempDir dir;
  dir.write("compute.json", ofProfileSize(stagecut::testing::exampleComputeValidation()).dump());
  nlohmann::json untrusted = ofProfileSize(stagecut::testing::exampleComputeValidation());
  stagecut::ValidationReport report = stagecut::validationFromJson(untrusted, "untrusted.json");
  report.environment = stagecut::RunEnvironment{};
  report.environment->warnings = {"other processes kept 1.0 cores busy"};
  dir.write("untrusted.json", stagecut::validationToJson(report).dump());
  nlohmann::json other_profile = ofProfileSize(stagecut::testing::exampleComputeValidation());
  other_profile["profile_fingerprint"] = "sha256:0000";
  dir.write("other.json", other_profile.dump());
  const std::string out = " -o '" + dir.file("cal.json") + "'";

  const auto expectError = [&](const std::string& args, const std::string& message) {
    INFO(args);
    const CommandResult result = runStagecut("calibrate " + args);
    CHECK(result.exit_code == 2);
    CHECK(result.out.empty());
    CHECK_THAT(result.err, StartsWith("stagecut: "));
    CHECK_THAT(result.err, Contains(message));
    CHECK(std::count(result.err.begin(), result.err.end(), '\n') == 1);
  };
  expectError("'" + kExampleGptProfile + "' --validation '" + dir.file("untrusted.json") + "'" + out,
              "untrusted.json: validate marked this run not trusted (other processes kept 1.0 cores busy)");
  expectError("'" + kExampleGptProfile + "' --validation '" + dir.file("other.json") + "'" + out,
              "other.json: was run on another profile than");
  expectError("'" + kExampleGptProfile + "' --validation '" + dir.file("compute.json") + "' -o '" + dir.file("compute.json") + "'",
              "compute.json");
  expectError("'" + kExampleGptProfile + "' --validation '" + dir.file("compute.json") + "' --prior-weight 0" + out,
              "--prior-weight 0");
  expectError("'" + kExampleGptProfile + "' --validation '" + dir.file("missing.json") + "'" + out, "missing.json");
  CHECK(dir.list() == std::vector<std::string>{"compute.json", "other.json", "untrusted.json"});
  // Fitting on the untrusted run anyway is the user's choice.
  CHECK(runStagecut("calibrate '" + kExampleGptProfile + "' --validation '" + dir.file("untrusted.json") +
                    "' --allow-untrusted" + out).exit_code == 0);
}
