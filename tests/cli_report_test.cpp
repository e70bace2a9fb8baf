#include <algorithm>
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/report_fixtures.h"
#include "core/json_document.h"
#include "core/profile_json.h"
#include "core/units.h"
#include "tests/test_support.h"

using Catch::Matchers::Contains;
using stagecut::testing::CommandResult;
using stagecut::testing::checkInputError;
using stagecut::testing::runStagecut;
using stagecut::testing::TempDir;

using stagecut::testing::kExampleGptProfile;

namespace {


CommandResult report(const std::string& args) { return runStagecut("report '" + kExampleGptProfile + "' " + args); }

}  // namespace

TEST_CASE("report splits the profile itself and writes one HTML file", "[cli][report]") {
  const TempDir dir;
  const CommandResult result = report("--stages 4 --microbatches 8 --memory-cap 140MiB -o '" + dir.file("r.html") + "'");
  REQUIRE(result.exit_code == 0);
  CHECK(result.err.empty());
  CHECK(result.out == "wrote " + dir.file("r.html") + " (3 splits, 6 schedules, 0 validation runs)\n");
  CHECK(dir.list() == std::vector<std::string>{"r.html"});
  const std::string html = stagecut::readTextFile(dir.file("r.html"));
  CHECK_THAT(html, Contains("compute split: 3,3,3,2"));
  CHECK_THAT(html, Contains("params split: 1,4,4,2"));
  CHECK_THAT(html, Contains(">cap 140 MiB</text>"));
  CHECK_THAT(html, Contains("<dt>command</dt><dd>"));
  CHECK_THAT(html, Contains("report " + kExampleGptProfile + " --stages 4"));
}

TEST_CASE("report takes splits from compare -o and runs from validate --json", "[cli][report]") {
  const TempDir dir;
  REQUIRE(runStagecut("compare '" + kExampleGptProfile + "' --stages 2 --microbatches 4 --json -o '" + dir.file("cmp.json") + "'").exit_code == 0);
  dir.write("compute.json", stagecut::testing::exampleComputeValidation().dump());
  dir.write("params.json", stagecut::testing::exampleParamsValidation().dump());
  const CommandResult result = report("--comparison '" + dir.file("cmp.json") + "' --validation '" +
                                      dir.file("compute.json") + "' '" + dir.file("params.json") +
                                      "' -o '" + dir.file("r.html") + "'");
  REQUIRE(result.exit_code == 0);
  CHECK_THAT(result.out, Contains("(3 splits, 6 schedules, 2 validation runs)"));
  const std::string html = stagecut::readTextFile(dir.file("r.html"));
  CHECK_THAT(html, Contains("4 microbatches per step"));  // implied by the saved splits
  CHECK_THAT(html, Contains(">Measured 1F1B</tspan>"));
  CHECK_THAT(html, Contains("Measured speed-up"));
  CHECK_THAT(html, Contains("Each schedule on its own best split"));  // compare's "schedules"
}

TEST_CASE("report leaves compare's own-split schedules out when drawn at another M, and says so", "[cli][report]") {
  const TempDir dir;
  REQUIRE(runStagecut("compare '" + kExampleGptProfile + "' --stages 2 --microbatches 4 --json -o '" + dir.file("cmp.json") + "'").exit_code == 0);
  const CommandResult result =
      report("--comparison '" + dir.file("cmp.json") + "' --microbatches 6 -o '" + dir.file("r.html") + "'");
  REQUIRE(result.exit_code == 0);
  const std::string html = stagecut::readTextFile(dir.file("r.html"));
  CHECK_THAT(html, !Contains("Each schedule on its own best split"));
  CHECK_THAT(html, Contains("Each schedule&#39;s own best split is not shown: " + dir.file("cmp.json") +
                            " chose them for 4 microbatches, not the 6 drawn here"));
}

TEST_CASE("report errors name the input and the fix, exit 2", "[cli][report][errors]") {
  const TempDir dir;
  const std::string out = " -o '" + dir.file("r.html") + "'";
  checkInputError(report(out), kExampleGptProfile + ": the report needs splits to compare; add --stages N (and "
                  "--microbatches M), or --comparison FILE written by 'stagecut compare " + kExampleGptProfile +
                  " --stages N -o FILE'");
  checkInputError(report("--stages 12" + out), "--stages 12: the profile has 11 layers; use --stages 11 or fewer");
  checkInputError(report("--stages 4 --schedules 1f1" + out), "--schedule: unknown schedule '1f1', did you mean '1f1b'?");
  checkInputError(report("--comparison '" + kExampleGptProfile + "'" + out),
                  kExampleGptProfile + ": is a stagecut.profile/1 document, not stagecut.comparison/1; write one "
                  "with 'stagecut compare PROFILE --stages N -o FILE'");
  dir.write("cmp.json", "{\"format\": \"stagecut.comparison/1\", \"splits\": []}");
  checkInputError(report("--comparison '" + dir.file("cmp.json") + "' --stages 4" + out),
                  "--stages 4: " + dir.file("cmp.json") + " already holds the splits; drop --stages, "
                  "or drop --comparison to split again");
  checkInputError(report("--stages 4 --validation '" + kExampleGptProfile + "'" + out),
                  kExampleGptProfile + ": is a stagecut.profile/1 document, not stagecut.validation/1; write one "
                  "with 'stagecut validate ... --json > FILE'");
  // Size parsing and folder checks are core's, tested word for word there: here, that they stop
  // the report with one line before any work.
  for (const std::string& args : {"--stages 4 --memory-cap 80XB" + out, "--stages 4 -o '" + dir.file("no/such/dir/r.html") + "'"}) {
    const CommandResult result = report(args);
    CHECK(result.exit_code == 2);
    CHECK(result.out.empty());
    CHECK(std::count(result.err.begin(), result.err.end(), '\n') == 1);
  }
  CHECK_THAT(report("--stages 4 --memory-cap 80XB" + out).err, Contains("--memory-cap"));
  CHECK(dir.list() == std::vector<std::string>{"cmp.json"});
}

TEST_CASE("report without -o says so in one line", "[cli][report][errors]") {
  const CommandResult result = report("--stages 4");
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.err, Contains("--output is required"));
  CHECK(std::count(result.err.begin(), result.err.end(), '\n') == 1);
}

TEST_CASE("report -o onto its profile or a --validation file is refused and the file kept byte for byte",
          "[cli][report][output][errors]") {
  const TempDir dir;
  dir.write("p.json", stagecut::readTextFile(kExampleGptProfile));
  dir.write("run.json", stagecut::testing::exampleComputeValidation().dump());
  const std::string profile = dir.file("p.json");
  const std::string run = dir.file("run.json");
  const std::string profile_before = stagecut::readTextFile(profile);
  const std::string run_before = stagecut::readTextFile(run);
  checkInputError(runStagecut("report '" + profile + "' --stages 2 -o '" + profile + "'"),
                  "-o " + profile + ": that is the input profile " + profile + "; write to another file");
  checkInputError(runStagecut("report '" + profile + "' --stages 2 --validation '" + run + "' -o '" + run + "'"),
                  "-o " + run + ": that is the --validation file " + run + "; write to another file");
  checkInputError(runStagecut("report '" + profile + "' --stages 2 -o ''"),
                  "-o '': the file name is empty; name the file to write");
  CHECK(stagecut::readTextFile(profile) == profile_before);
  CHECK(stagecut::readTextFile(run) == run_before);
  CHECK(dir.list() == std::vector<std::string>{"p.json", "run.json"});
}

// The oracle: another profile is any other content; the demo's profile is one.
TEST_CASE("report refuses a comparison or a validation made from another profile", "[cli][report][errors]") {
  const TempDir dir;
  const std::string other = std::string(STAGECUT_SOURCE_DIR) + "/data/samples/demo-gpt.profile.json";
  REQUIRE(runStagecut("compare '" + other + "' --stages 2 --microbatches 4 -o '" + dir.file("cmp.json") + "'").exit_code == 0);
  const std::string out = " -o '" + dir.file("r.html") + "'";
  checkInputError(report("--comparison '" + dir.file("cmp.json") + "'" + out),
                  dir.file("cmp.json") + ": was made from another profile than " + kExampleGptProfile +
                      " (its profile_fingerprint differs); give the profile it was made from, or make it again with "
                      "'stagecut compare " + kExampleGptProfile + " --stages N -o FILE'");

  nlohmann::json run = stagecut::testing::exampleComputeValidation();
  run["profile_fingerprint"] = stagecut::readProfileFingerprint(other);
  dir.write("run.json", run.dump());
  checkInputError(report("--stages 2 --validation '" + dir.file("run.json") + "'" + out),
                  dir.file("run.json") + ": was made from another profile than " + kExampleGptProfile +
                      " (its profile_fingerprint differs); give the profile it was made from, or make it again with "
                      "'stagecut validate " + kExampleGptProfile + " --partition PART --json > FILE'");
  // The same documents of this profile are taken; one with no fingerprint (older) too.
  run["profile_fingerprint"] = stagecut::readProfileFingerprint(kExampleGptProfile);
  dir.write("run.json", run.dump());
  REQUIRE(runStagecut("compare '" + kExampleGptProfile + "' --stages 2 --microbatches 4 -o '" + dir.file("cmp.json") + "'").exit_code == 0);
  CHECK(nlohmann::json::parse(stagecut::readTextFile(dir.file("cmp.json")))["profile_fingerprint"] ==
        stagecut::readProfileFingerprint(kExampleGptProfile));
  const CommandResult taken = report("--comparison '" + dir.file("cmp.json") + "' --validation '" + dir.file("run.json") +
                                     "' '" + dir.file("run.json") + "'" + out);
  CHECK(taken.exit_code == 0);
  CHECK(dir.list() == std::vector<std::string>{"cmp.json", "r.html", "run.json"});
}

TEST_CASE("report prices a tensor-parallel profile's collectives with --tp-bandwidth", "[cli][report][tensor-parallel]") {
  const TempDir dir;
  stagecut::Profile profile = stagecut::readProfileFile(kExampleGptProfile);
  profile.model.config["tensor_parallel"] = 2;
  for (auto& layer : profile.layers) layer.tp_collectives = stagecut::LayerCost::TensorParallelCollectives{2, 2, 50000000};
  stagecut::writeProfileFile(dir.file("tp.json"), profile);
  const std::string args = "report '" + dir.file("tp.json") + "' --stages 2 --microbatches 4 -o '";
  REQUIRE(runStagecut(args + dir.file("plain.html") + "'").exit_code == 0);
  REQUIRE(runStagecut(args + dir.file("priced.html") + "' --tp-bandwidth 10GB/s --tp-latency 10us").exit_code == 0);
  // The collectives lengthen every step the report draws.
  CHECK(stagecut::readTextFile(dir.file("plain.html")) != stagecut::readTextFile(dir.file("priced.html")));
  checkInputError(report("--stages 2 -o '" + dir.file("r.html") + "' --tp-bandwidth 10GB/s"),
                  "--tp-bandwidth: " + kExampleGptProfile +
                      " was not profiled with --tensor-parallel; its layers have no collectives to price");
  REQUIRE(runStagecut("compare '" + dir.file("tp.json") + "' --stages 2 --microbatches 4 --json -o '" +
                      dir.file("cmp.json") + "'").exit_code == 0);
  checkInputError(runStagecut("report '" + dir.file("tp.json") + "' --comparison '" + dir.file("cmp.json") +
                              "' --tp-bandwidth 10GB/s -o '" + dir.file("r.html") + "'"),
                  "--tp-bandwidth: shapes new splits, but " + dir.file("cmp.json") +
                      " already holds them; drop --tp-bandwidth, or drop --comparison to split again");
}

// validate writes the median step, its list, the error and the timeline from one measurement.
TEST_CASE("report refuses a validation whose step is impossible or disagrees with itself", "[cli][report][errors]") {
  const TempDir dir;
  const std::string out = " -o '" + dir.file("r.html") + "'";
  const nlohmann::json good = stagecut::testing::exampleComputeValidation();
  const double step = good["measured_step_ms"].get<double>();
  const auto refused = [&](const nlohmann::json& run, const std::string& why) {
    dir.write("run.json", run.dump());
    checkInputError(report("--stages 2 --validation '" + dir.file("run.json") + "'" + out),
                    dir.file("run.json") + ": " + why + "; write the document again with 'stagecut validate ... --json'");
    CHECK(dir.list() == std::vector<std::string>{"run.json"});
  };
  nlohmann::json run = good;
  run["measured_step_ms"] = 1e308;
  for (auto& each : run["measured_steps_ms"]) each = 1e308;
  refused(run, "field \"measured_steps_ms\" holds a step of " + stagecut::formatMs(1e308) +
                   " ms, longer than validate's longest --timeout (a day)");
  run = good;
  run["measured_step_ms"] = 1e308;
  refused(run, "field \"measured_step_ms\" is " + stagecut::formatMs(1e308) +
                   " ms, longer than validate's longest --timeout (a day)");
  run = good;
  run["measured_step_ms"] = 2 * step;
  std::vector<double> steps = good["measured_steps_ms"].get<std::vector<double>>();
  std::sort(steps.begin(), steps.end());
  refused(run, "field \"measured_step_ms\" is " + stagecut::formatMs(2 * step) + " ms, outside its \"measured_steps_ms\" (" +
                   stagecut::formatMs(steps.front()) + " to " + stagecut::formatMs(steps.back()) + " ms)");
  run = good;
  run["error"] = 0.5;
  CHECK(run["error"] != good["error"]);
  dir.write("run.json", run.dump());
  CHECK_THAT(report("--stages 2 --validation '" + dir.file("run.json") + "'" + out).err,
             Contains(": field \"error\" is +50.0%, but measured_step_ms / predicted_step_ms - 1 is "));
  run = good;
  for (auto& rank : run["timeline"]["measured"]) rank.back()[3] = rank.back()[3].get<double>() * 3;
  dir.write("run.json", run.dump());
  CHECK_THAT(report("--stages 2 --validation '" + dir.file("run.json") + "'" + out).err,
             Contains(": the measured timeline ends at "));
  dir.write("run.json", good.dump());
  CHECK(report("--stages 2 --validation '" + dir.file("run.json") + "'" + out).exit_code == 0);
}
