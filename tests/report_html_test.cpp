#include <regex>
#include <string>

#include <catch2/catch.hpp>

#include "core/error.h"
#include "core/partition_json.h"
#include "core/profile_json.h"
#include "core/units.h"
#include "partitioner/partition_options.h"
#include "partitioner/schedule_choices.h"
#include "report/report_html.h"
#include "report/report_inputs.h"
#include "report/validation_view.h"
#include "tests/report_fixtures.h"
#include "tests/test_support.h"
#include "validation/validation_json.h"

using Catch::Matchers::Contains;
using stagecut::Error;
using stagecut::PartitionOptions;
using stagecut::Profile;
using stagecut::ReportInputs;

using stagecut::testing::kExampleGptProfile;

namespace {


ReportInputs exampleInputs(int stages, int microbatches) {
  PartitionOptions options;
  options.placement = stagecut::Placement::loop(stages, 1);
  options.microbatches = microbatches;
  return stagecut::buildReportInputs(stagecut::readProfileFile(kExampleGptProfile), options, "example-gpt.profile.json");
}

std::size_t countOf(const std::string& text, const std::string& needle) {
  std::size_t count = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++count;
  return count;
}

std::string joined(const std::vector<int>& counts) {
  std::string text;
  for (int count : counts) text += (text.empty() ? "" : ",") + std::to_string(count);
  return text;
}

}  // namespace

TEST_CASE("the report names every layer and every split's layers per stage", "[report]") {
  const ReportInputs inputs = exampleInputs(4, 8);
  const std::string html = stagecut::renderReportHtml(inputs);
  CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
  for (const auto& layer : inputs.profile.layers) CHECK_THAT(html, Contains(">" + layer.name + "<"));
  REQUIRE(inputs.splits.size() == 3);
  for (const auto& split : inputs.splits) {
    CHECK_THAT(html, Contains(split.method + " split: " + joined(split.layersPerStage())));
  }
  CHECK(inputs.chosen.method == "compute");
  CHECK_THAT(html, Contains("1,4,4,2"));  // the params split, which puts the embedding alone
}

TEST_CASE("the report fetches nothing: its only URLs are the SVG namespace", "[report]") {
  ReportInputs inputs = exampleInputs(2, 4);
  inputs.validations.push_back({"compute.json", stagecut::validationFromJson(stagecut::testing::exampleComputeValidation(), "compute.json")});
  const std::string html = stagecut::renderReportHtml(inputs);
  CHECK(countOf(html, "<script") == 0);
  CHECK(countOf(html, "<link") == 0);
  CHECK(countOf(html, "@import") == 0);
  const std::regex url("(https?:)?//[A-Za-z0-9]");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), url); it != std::sregex_iterator(); ++it) {
    const std::size_t at = static_cast<std::size_t>(it->position());
    INFO(html.substr(at > 40 ? at - 40 : 0, 100));
    CHECK(html.compare(at >= 7 ? at - 7 : 0, 7 + 26, "xmlns=\"http://www.w3.org/2000/svg") == 0);
  }
  const std::regex attribute("(src|href)\\s*=\\s*\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), attribute); it != std::sregex_iterator(); ++it) {
    INFO((*it)[0].str());
    CHECK((*it)[2].str().rfind("#", 0) == 0);
  }
}

TEST_CASE("the report draws a Gantt chart of every simulated schedule", "[report]") {
  const ReportInputs inputs = exampleInputs(4, 8);
  REQUIRE(inputs.schedules.size() == 6);
  const std::string html = stagecut::renderReportHtml(inputs);
  for (const char* name : {"GPipe", "1F1B", "Interleaved 1F1B (v = 2)", "ZB-H1", "ZB-V", "DualPipeV"}) {
    CHECK_THAT(html, Contains("<tspan font-weight=\"bold\">" + std::string(name) + "</tspan>"));
  }
  // Each inline chart has its own idle pattern: ids are page-wide in HTML.
  CHECK(countOf(html, "id=\"idle\"") == 0);
  CHECK(countOf(html, "id=\"idle-0\"") == 1);
  CHECK(countOf(html, "<?xml") == 0);
}

TEST_CASE("interleaved 1F1B is left out with a note when M is not a multiple of N", "[report]") {
  const ReportInputs inputs = exampleInputs(4, 6);
  CHECK(inputs.schedules.size() == 4);
  CHECK_THAT(stagecut::renderReportHtml(inputs),
             Contains("Interleaved 1F1B is not shown: it needs the microbatches (6) a multiple of the 4 stages"));
}

TEST_CASE("each schedule's own best split is tabled as compare chooses it, the left-out ones said why", "[report]") {
  PartitionOptions options;
  options.placement = stagecut::Placement::loop(2, 1);
  options.microbatches = 8;
  const Profile profile = stagecut::readProfileFile(kExampleGptProfile);
  const ReportInputs inputs = stagecut::buildReportInputs(profile, options, "example-gpt.profile.json");
  const std::vector<stagecut::ScheduleChoice> choices = stagecut::bestSplitPerSchedule(profile, options, "p.json");
  REQUIRE(inputs.schedule_choices.size() == choices.size());
  const std::string html = stagecut::renderReportHtml(inputs);
  CHECK_THAT(html, Contains("Each schedule on its own best split"));
  for (const stagecut::ScheduleChoice& choice : choices) {
    REQUIRE(choice.split);
    // The row is the chunking made for the schedule, with its own simulated step.
    CHECK_THAT(html, Contains("<td>" + std::to_string(choice.placement.chunks_per_rank) + "</td><td>" +
                              stagecut::joinNumbers(choice.split->layersPerStage()) + "</td><td>" +
                              stagecut::formatMs(choice.split->bottleneck_ms) + "</td><td>" +
                              stagecut::formatMs(choice.step_ms) + "</td>"));
  }
  CHECK(countOf(html, "Left out: ") == 0);

  const ReportInputs narrow = exampleInputs(4, 6);  // not a multiple of 4, under DualPipeV's 2N
  const std::string narrow_html = stagecut::renderReportHtml(narrow);
  CHECK_THAT(narrow_html, Contains("Left out: Interleaved 1F1B (v = 2): "));
  CHECK_THAT(narrow_html, Contains("Left out: DualPipeV (v = 2): "));
  ReportInputs none = exampleInputs(2, 4);
  none.schedule_choices.clear();
  CHECK_THAT(stagecut::renderReportHtml(none), !Contains("Each schedule on its own best split"));
}

TEST_CASE("validations show predicted above measured on one axis, and the measured speed-up", "[report]") {
  ReportInputs inputs = exampleInputs(2, 4);
  const std::string without = stagecut::renderReportHtml(inputs);
  CHECK_THAT(without, !Contains("Predicted 1F1B"));
  CHECK_THAT(without, !Contains("id=\"validation\""));

  inputs.validations.push_back({"compute-run.json", stagecut::validationFromJson(stagecut::testing::exampleComputeValidation(), "compute-run.json")});
  inputs.validations.push_back({"params-run.json", stagecut::validationFromJson(stagecut::testing::exampleParamsValidation(), "params-run.json")});
  const std::string html = stagecut::renderReportHtml(inputs);
  CHECK(countOf(html, ">Predicted 1F1B</tspan>") == 2);
  CHECK(countOf(html, ">Measured 1F1B</tspan>") == 2);
  // The pair sits in one <svg>: predicted first, measured next, no chart closed between them.
  const std::size_t predicted = html.find(">Predicted 1F1B</tspan>");
  const std::size_t measured = html.find(">Measured 1F1B</tspan>", predicted);
  REQUIRE(measured != std::string::npos);
  CHECK(html.substr(predicted, measured - predicted).find("</svg>") == std::string::npos);
  CHECK_THAT(html, Contains("compute split 6,5, 1F1B, 4 microbatches"));
  CHECK_THAT(html, Contains("uniform split (same as params) 5,6, 1F1B, 4 microbatches"));
  CHECK_THAT(html, Contains("compute-run.json"));
  CHECK_THAT(html, Contains("Measured speed-up"));
  CHECK_THAT(html, Contains("<span class=\"badge pass\">pass</span>"));
}

TEST_CASE("a validation the machine voided says so beside its figures", "[report]") {
  ReportInputs inputs = exampleInputs(2, 4);
  nlohmann::json document = stagecut::testing::exampleComputeValidation();
  stagecut::RankEnvironment rank;
  rank.host = "vm";
  rank.usable_cores = 2;
  rank.threads = 1;
  rank.window_s = 10;
  rank.own_cpu_s = 9;
  rank.host_busy_cpu_s = 9 + 12;
  const stagecut::RunEnvironment environment = stagecut::assessEnvironment(std::nullopt, 1, {rank});
  REQUIRE_FALSE(environment.trusted());
  document["environment"] = stagecut::runEnvironmentToJson(environment);
  inputs.validations.push_back({"busy-run.json", stagecut::validationFromJson(document, "busy-run.json")});
  const std::string html = stagecut::renderReportHtml(inputs);
  CHECK_THAT(html, Contains("<b>Not trusted:</b> other processes kept 1.20 core(s) of vm busy during the run"));
  inputs.validations.back() = {"quiet-run.json",
                               stagecut::validationFromJson(stagecut::testing::exampleComputeValidation(), "quiet-run.json")};
  CHECK_THAT(stagecut::renderReportHtml(inputs), !Contains("Not trusted"));
}

TEST_CASE("the memory chart draws the cap only when one is given", "[report]") {
  ReportInputs inputs = exampleInputs(4, 8);
  CHECK_THAT(stagecut::renderReportHtml(inputs), !Contains("cap 140 MiB"));
  CHECK_THAT(stagecut::renderReportHtml(inputs), Contains("No memory cap was given"));
  inputs.memory_cap_bytes = {140ull << 20};
  const std::string html = stagecut::renderReportHtml(inputs);
  CHECK_THAT(html, Contains(">cap 140 MiB</text>"));
  CHECK_THAT(html, Contains("Memory cap: <b>140 MiB</b>"));
  inputs.memory_cap_bytes = {100ull << 20};  // the 125 MiB stages are over it
  CHECK_THAT(stagecut::renderReportHtml(inputs), Contains("(over the cap)"));
}

TEST_CASE("names with <, > and & are escaped everywhere", "[report]") {
  Profile profile = stagecut::readProfileFile(kExampleGptProfile);
  profile.layers[0].name = "<embed>&\"x\"";
  profile.model.name = "gpt<script>alert(1)</script>";
  PartitionOptions options;
  options.placement = stagecut::Placement::loop(4, 1);
  options.microbatches = 8;
  ReportInputs inputs = stagecut::buildReportInputs(profile, options, "a&b.json");
  inputs.provenance.command_line = "stagecut report 'a&b.json' -o <out>.html";
  const std::string html = stagecut::renderReportHtml(inputs);
  CHECK_THAT(html, Contains("&lt;embed&gt;&amp;&quot;x&quot;"));
  CHECK_THAT(html, !Contains("<embed>"));
  CHECK_THAT(html, !Contains("<script>"));
  CHECK_THAT(html, Contains("a&amp;b.json"));
  CHECK_THAT(html, Contains("-o &lt;out&gt;.html"));
}

TEST_CASE("the per-layer text names the layer where parameters and compute disagree most", "[report]") {
  const std::string html = stagecut::renderReportHtml(exampleInputs(4, 8));
  CHECK_THAT(html, Contains("Parameters and compute disagree: <b>embed</b> holds 28% of the parameters and 1.3% of the compute"));
}

TEST_CASE("provenance falls back to the profile's device block", "[report]") {
  ReportInputs inputs = exampleInputs(2, 4);
  inputs.provenance.stagecut_version = "stagecut 9.9";
  inputs.provenance.date = "2030-01-01 00:00 UTC";
  const std::string html = stagecut::renderReportHtml(inputs);
  CHECK_THAT(html, Contains("<dt>device</dt><dd>example: hand-written numbers, not a measurement</dd>"));
  CHECK_THAT(html, Contains("<dt>LibTorch</dt><dd>not recorded</dd>"));
  CHECK_THAT(html, Contains("<dt>stagecut</dt><dd>stagecut 9.9</dd>"));
  CHECK_THAT(html, Contains("<dt>date</dt><dd>2030-01-01 00:00 UTC</dd>"));
}

TEST_CASE("splits read back from a comparison keep compute as the chosen one and imply M", "[report]") {
  const ReportInputs built = exampleInputs(4, 8);
  const ReportInputs again = stagecut::reportInputsFromSplits(built.profile, "p.json", built.splits, "cmp.json", 0);
  CHECK(again.chosen.method == "compute");
  CHECK(again.microbatches == 8);
  CHECK(again.schedules.size() == 6);
  CHECK(stagecut::reportInputsFromSplits(built.profile, "p.json", built.splits, "cmp.json", 12).microbatches == 12);
  CHECK_THROWS_WITH(stagecut::reportInputsFromSplits(built.profile, "p.json", {}, "cmp.json", 0),
                    "cmp.json: holds no splits; write it with 'stagecut compare p.json --stages N -o FILE'");
  CHECK_THROWS_WITH(stagecut::comparisonFromJson({{"format", "stagecut.partition/1"}}, "cmp.json"),
                    "cmp.json: is a stagecut.partition/1 document, not stagecut.comparison/1; write one "
                    "with 'stagecut compare PROFILE --stages N -o FILE'");
}

TEST_CASE("validation documents are checked with messages naming the file", "[report][errors]") {
  const nlohmann::json good = stagecut::testing::exampleComputeValidation();
  const stagecut::ValidationView view = stagecut::readValidationView(good, "v.json", 11);
  CHECK(view.layers_per_stage == std::vector<int>{6, 5});
  CHECK(view.measured.step_ms == Approx(view.predicted.step_ms * 1.08));
  CHECK(view.measured_ops.ranks[0].size() == 8);

  CHECK_THROWS_WITH(stagecut::readValidationView({{"format", "stagecut.profile/1"}}, "v.json", 11),
                    "v.json: is a stagecut.profile/1 document, not stagecut.validation/1; write one "
                    "with 'stagecut validate ... --json > FILE'");
  CHECK_THROWS_WITH(stagecut::readValidationView(good, "v.json", 8),
                    "v.json: rank 1 holds layers 6-10 but the profile has 8 layers; was it validated "
                    "on another profile?");
  nlohmann::json bad_op = good;
  bad_op["timeline"]["measured"][1][2] = {"X", 0, 1.0, 2.0};
  CHECK_THROWS_WITH(stagecut::readValidationView(bad_op, "v.json", 11),
                    "v.json: timeline.measured[1][2]: op kind \"X\" is not \"F\", \"B\", \"W\" or \"A\"");
  nlohmann::json backwards = good;
  backwards["timeline"]["predicted"][0][0] = {"F", 0, 5.0, 1.0};
  CHECK_THROWS_WITH(stagecut::readValidationView(backwards, "v.json", 11),
                    "v.json: timeline.predicted[0][0]: start_ms and end_ms must be finite with end >= start");
  nlohmann::json no_timeline = good;
  no_timeline.erase("timeline");
  CHECK_THROWS_AS(stagecut::readValidationView(no_timeline, "v.json", 11), Error);
}

TEST_CASE("the schedules of a recomputing split are drawn with its recomputation", "[report][recompute]") {
  const Profile profile = stagecut::readProfileFile(kExampleGptProfile);
  PartitionOptions options;
  options.placement = stagecut::Placement::loop(2, 1);
  options.microbatches = 4;
  const ReportInputs plain = stagecut::buildReportInputs(profile, options, "example-gpt.profile.json");
  options.recompute.mode = stagecut::RecomputePolicy::Mode::kFull;
  const ReportInputs recomputed = stagecut::buildReportInputs(profile, options, "example-gpt.profile.json");
  REQUIRE(recomputed.chosen.stages[0].recompute == std::string("full"));
  REQUIRE(plain.schedules.size() == recomputed.schedules.size());
  for (std::size_t i = 0; i < plain.schedules.size(); ++i) {
    // The first B of rank 0 grows by the stage's forward, which it reruns.
    const auto first_backward = [](const stagecut::ReportSchedule& run) {
      const auto& ops = run.schedule.ranks[0];
      for (std::size_t k = 0; k < ops.size(); ++k) {
        if (ops[k].kind == stagecut::OpKind::kBackward) return run.result.op_times[0][k].end_ms - run.result.op_times[0][k].start_ms;
      }
      return 0.0;
    };
    const auto& stage = recomputed.chosen.stages[0];
    INFO(plain.schedules[i].schedule.name);
    const double chunks = plain.schedules[i].schedule.placement.chunks_per_rank;
    CHECK(first_backward(recomputed.schedules[i]) == Approx(first_backward(plain.schedules[i]) + *stage.recompute_ms / chunks));
    CHECK(recomputed.schedules[i].result.step_ms > plain.schedules[i].result.step_ms);
  }
}

TEST_CASE("the report takes a data-parallel validation: every replica's ranks and the all-reduce ops",
          "[report][data-parallel]") {
  // What validate --data-parallel 2 writes: N x D ranks and an all-reduce op A closing each rank.
  nlohmann::json document = stagecut::testing::exampleComputeValidation(2);
  const stagecut::ValidationView view = stagecut::readValidationView(document, "dp.json", 11);
  CHECK(view.data_parallel == 2);
  CHECK(view.layers_per_stage == std::vector<int>{6, 5});
  CHECK(view.measured_ops.ranks[0].back().kind == stagecut::OpKind::kAllReduce);
  CHECK(view.measured.ranks[0].allreduce_ms == Approx(2.0 * 1.08));  // the fixture stretches every op

  ReportInputs inputs = exampleInputs(2, 4);
  inputs.validations.push_back({"dp.json", stagecut::validationFromJson(document, "dp.json")});
  CHECK_THAT(stagecut::renderReportHtml(inputs), Contains("dp.json"));

  document["ranks"].erase(3);
  CHECK_THROWS_WITH(stagecut::readValidationView(document, "dp.json", 11),
                    "dp.json: field \"ranks\" lists 3 ranks but \"stages\" is 2 with 2 replicas");
}
