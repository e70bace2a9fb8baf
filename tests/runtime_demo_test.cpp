#include <catch2/catch.hpp>

#include "core/json_document.h"
#include "core/profile_json.h"
#include "tests/test_support.h"

using stagecut::testing::CommandResult;
using stagecut::testing::runStagecut;
using stagecut::testing::TempDir;
using Catch::Matchers::Contains;

TEST_CASE("the quick demo runs every step and ends with its summary lines", "[runtime][demo]") {
  const TempDir dir;
  const CommandResult result = runStagecut("demo --quick --output-dir " + dir.file("report"));
  REQUIRE(result.exit_code == 0);
  for (const char* step : {"1/5  profile", "2/5  partition", "3/5  simulate", "4/5  validate", "5/5  the split"}) {
    CHECK_THAT(result.out, Contains(step));
  }
  CHECK_THAT(result.out, Contains("report: " + dir.file("report") + "/report.html\nmegatron: --pipeline-model-parallel-layout"));
  CHECK_THAT(result.out, Contains("measured speed-up of equal-compute over equal-params on 2 ranks: "));
  // Its figures are a tiny model's: it says they measure nothing.
  CHECK_THAT(result.out, Contains("(--quick: one timing per layer"));
  CHECK_THAT(result.out, Contains("a smoke test of the commands, not a measurement"));
  // Both splits were run for real and their gradients matched the full batch's.
  for (const char* split : {"compute", "params"}) {
    const auto run = nlohmann::json::parse(stagecut::readTextFile(dir.file("report/validation-") + split + ".json"));
    CHECK(run["grad_check"] == "pass");
  }
  CHECK_NOTHROW(stagecut::readProfileFile(dir.file("report/profile.json")));
  // The last line: both splits as the profile calibrated on both runs predicts them (or why not).
  const std::string last_line = result.out.substr(result.out.rfind('\n', result.out.size() - 2) + 1);
  if (last_line.rfind("calibrated on both runs", 0) == 0) {
    CHECK_THAT(last_line, Contains("compute "));
    CHECK_THAT(last_line, Contains("params "));
    const stagecut::Profile calibrated = stagecut::readProfileFile(dir.file("report/profile-calibrated.json"));
    REQUIRE(calibrated.calibration.has_value());
    CHECK(calibrated.calibration->runs.size() == 2);
  } else {
    CHECK_THAT(last_line, Contains("not calibrated: validate did not trust the"));
  }
  const std::string html = stagecut::readTextFile(dir.file("report/report.html"));
  CHECK_THAT(html, Contains("block.2"));
}

TEST_CASE("the demo says when its output folder cannot be made", "[runtime][demo][errors]") {
  const CommandResult result = runStagecut("demo --quick --output-dir /proc/no-such/dir");
  CHECK(result.exit_code == 2);
  CHECK(result.err == "stagecut: --output-dir /proc/no-such/dir: cannot create the folder (No such file or directory)\n");
  // Refused before the profile starts: an empty name, and a file where the folder should be.
  stagecut::testing::checkInputError(runStagecut("demo --quick --output-dir ''"),
                                     "--output-dir is empty; name the folder the report goes to");
  const TempDir dir;
  dir.write("report", "the user's notes");
  stagecut::testing::checkInputError(runStagecut("demo --quick --output-dir " + dir.file("report")),
                                     "--output-dir " + dir.file("report") +
                                         ": is not a folder; name a folder for the report (it is made if missing)");
  CHECK(stagecut::readTextFile(dir.file("report")) == "the user's notes");
  CHECK(dir.list() == std::vector<std::string>{"report"});
}
