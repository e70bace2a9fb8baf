// libFuzzer target: `stagecut validate --json` documents, as report --validation and calibrate
// read them (validation/validation_json.cpp). An accepted document must hold together as validate
// writes it (no step longer than a day, the median among the steps, the error its ratio to the
// prediction less 1, no measured op after the step), and writing what was read must read back
// the same.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/json_document.h"
#include "fuzz/fuzz_check.h"
#include "validation/validation_json.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  stagecut::fuzz::expectCleanOutcome([&] {
    const nlohmann::json document = stagecut::parseJsonDocument(text, "fuzz.validation.json");
    const stagecut::ValidationReport report = stagecut::validationFromJson(document, "fuzz.validation.json");
    const double median = report.measured_step_median_ms;
    constexpr double kDayMs = 86400.0 * 1000.0;
    if (!std::isfinite(median) || median > kDayMs) stagecut::fuzz::finding("a measured step past a day accepted");
    for (double step : report.measured_step_ms) {
      if (!std::isfinite(step) || step > kDayMs) stagecut::fuzz::finding("a step past a day accepted");
    }
    if (!report.measured_step_ms.empty()) {
      const auto [low, high] = std::minmax_element(report.measured_step_ms.begin(), report.measured_step_ms.end());
      if (median < *low || median > *high) stagecut::fuzz::finding("a median outside its steps accepted");
    }
    if (report.measured.step_ms > median * (1 + 1e-6) + 1e-6) {
      stagecut::fuzz::finding("a measured timeline ending after its step accepted");
    }
    const nlohmann::json written = stagecut::validationToJson(report);
    const nlohmann::json again =
        stagecut::validationToJson(stagecut::validationFromJson(written, "written.validation.json"));
    if (written != again) stagecut::fuzz::finding("a validation that does not read back as written");
  });
  return 0;
}
