#include <cmath>
#include <string>

#include <catch2/catch.hpp>

#include "core/error.h"
#include "core/json_document.h"
#include "tests/report_fixtures.h"
#include "validation/validation_json.h"
#include "validation/validation_trace.h"

namespace {

using nlohmann::json;
using stagecut::ValidationReport;
using stagecut::validationFromJson;
using stagecut::validationToJson;

std::string text(const ValidationReport& report) { return stagecut::toJsonText(validationToJson(report)); }

// write -> read -> write gives the same bytes, and the report read back is the one written.
void checkRoundTrip(const ValidationReport& original) {
  const std::string written = text(original);
  const ValidationReport back = validationFromJson(json::parse(written), "v.json");
  CHECK(text(back) == written);
  CHECK(back.ops.ranks == original.ops.ranks);
  CHECK(back.measured_replicas.size() == original.measured_replicas.size());
  CHECK(back.predicted.step_ms == original.predicted.step_ms);
  CHECK(back.measured.bubble == Approx(original.measured.bubble));
  for (std::size_t r = 0; r < original.ops.ranks.size(); ++r) {
    CHECK(back.predicted.ranks[r].busy_ms == Approx(original.predicted.ranks[r].busy_ms));
  }
  CHECK(stagecut::validationTrace(back) == stagecut::validationTrace(original));
}

ValidationReport withRecompute(ValidationReport report) {
  stagecut::RecomputeComparison recompute;
  recompute.measured_step_ms = {41.0, 40.5};
  recompute.measured_step_median_ms = 40.75;
  recompute.predicted_step_ms = 39.0;
  recompute.error = 40.75 / 39.0 - 1.0;
  recompute.grad_max_rel_diff = 2e-7;
  for (std::size_t r = 0; r < report.ranks.size(); ++r) {
    recompute.measured_peak_bytes.push_back(30000000 + static_cast<std::int64_t>(r));
    recompute.predicted_peak_bytes.push_back(29000000 + r);
    recompute.measured_busy_ms.push_back(30.0 + static_cast<double>(r));
    recompute.predicted_busy_ms.push_back(29.0 + static_cast<double>(r));
  }
  recompute.predicted = report.predicted;
  recompute.measured = report.measured;
  report.recompute = recompute;
  return report;
}

}  // namespace

TEST_CASE("a validation document reads back into the report that writes the same bytes", "[validation][format]") {
  SECTION("one pipeline") { checkRoundTrip(validationFromJson(stagecut::testing::exampleComputeValidation(), "v.json")); }
  SECTION("two data-parallel replicas, all-reduce ops included") {
    const ValidationReport report = stagecut::testing::makeValidationReport({{0, 5}, {6, 10}}, {10.3, 12.3},
                                                                            {21.1, 24.1}, 4, 1.08, 2);
    checkRoundTrip(report);
    const json document = validationToJson(report);
    CHECK(document["ranks"].size() == 4);
    CHECK(document["ranks"][3]["replica"] == 1);
    CHECK(validationFromJson(document, "v.json").ranks[3].stage == 1);
  }
  SECTION("with the checkpointed run") {
    checkRoundTrip(withRecompute(validationFromJson(stagecut::testing::exampleParamsValidation(), "v.json")));
  }
  SECTION("with the fingerprint of the profile it ran") {
    ValidationReport report = validationFromJson(stagecut::testing::exampleComputeValidation(), "v.json");
    report.profile_fingerprint = "sha256:" + std::string(64, 'e');
    CHECK(validationToJson(report)["profile_fingerprint"] == report.profile_fingerprint);
    checkRoundTrip(report);
    CHECK(validationFromJson(validationToJson(report), "v.json").profile_fingerprint == report.profile_fingerprint);
  }
  SECTION("a run without a loss writes null and reads NaN") {
    ValidationReport report = validationFromJson(stagecut::testing::exampleParamsValidation(), "v.json");
    report.loss_pipeline = std::nan("");
    CHECK(validationToJson(report)["loss"].is_null());
    checkRoundTrip(report);
    CHECK(std::isnan(validationFromJson(validationToJson(report), "v.json").loss_pipeline));
  }
}

TEST_CASE("validation documents written before op medians and microbatch sizes still read", "[validation][format]") {
  json document = stagecut::testing::exampleComputeValidation();
  document.erase("microbatch_size");
  for (json& rank : document["ranks"]) rank.erase("op_median_ms");
  const ValidationReport report = validationFromJson(document, "old.json");
  CHECK(report.microbatch_size == 0);
  CHECK(report.ranks[1].measured_backward_ms == 0.0);
}

TEST_CASE("a validation document that does not hold together is refused in one line naming the field",
          "[validation][format][errors]") {
  const json good = stagecut::testing::exampleComputeValidation();
  const auto refused = [](const json& document) {
    try {
      validationFromJson(document, "v.json");
    } catch (const stagecut::Error& error) {
      return std::string(error.what());
    }
    return std::string("accepted");
  };
  CHECK(refused({{"format", "stagecut.plan/1"}}) ==
        "v.json: is a stagecut.plan/1 document, not stagecut.validation/1; write one with 'stagecut validate ... "
        "--json > FILE'");
  CHECK(refused({{"stages", 2}}) ==
        "v.json: no string \"format\" field; expected a stagecut.validation/1 document, written with 'stagecut "
        "validate ... --json > FILE'");
  json missing = good;
  missing.erase("predicted_step_ms");
  CHECK(refused(missing) == "v.json: field \"predicted_step_ms\" is missing; it is required");
  json wrong_type = good;
  wrong_type["ranks"][1]["worst_parameter"] = 3;
  CHECK(refused(wrong_type) == "v.json: rank 1: field \"ranks[].worst_parameter\" must be a string, got 3");
  json grad = good;
  grad["grad_check"] = "maybe";
  CHECK(refused(grad) == "v.json: field \"grad_check\" must be \"pass\" or \"fail\", got \"maybe\"");
  json out_of_order = good;
  out_of_order["ranks"][1]["rank"] = 0;
  CHECK(refused(out_of_order) == "v.json: rank 1: field \"ranks[].rank\" must be 1 (ranks are listed in order)");
  json other_ops = good;
  other_ops["timeline"]["measured"][0][0][1] = 3;
  CHECK(refused(other_ops) ==
        "v.json: timeline.measured[0]: the ops differ from the predicted timeline's; both runs follow the same op "
        "lists");
  json few_replicas = validationToJson(
      stagecut::testing::makeValidationReport({{0, 5}, {6, 10}}, {10.3, 12.3}, {21.1, 24.1}, 4, 1.08, 2));
  few_replicas["timeline"]["measured_replicas"].erase(1);
  CHECK(refused(few_replicas) ==
        "v.json: field \"timeline.measured_replicas\" lists 1 timelines, one per replica (2) expected");
  json bad_microbatch = good;
  bad_microbatch["timeline"]["predicted"][0][0][1] = -1;
  CHECK(refused(bad_microbatch) == "v.json: timeline.predicted[0][0]: microbatch -1 is out of range");
}
