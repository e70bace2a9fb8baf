#pragma once

#include <string>

#include "report/report_inputs.h"

namespace stagecut {

/// The whole report as one self-contained HTML page (inline CSS and SVG, no script, no network
/// access): headline figures, the per-layer chart, the comparison table with each split drawn
/// over the layers, Gantt charts of every schedule, predicted vs measured Gantt charts of each
/// validation, memory per stage against the cap, and provenance. Every name from the inputs is
/// HTML-escaped. Throws Error (input) naming the file when a validation document is malformed
/// (see readValidationView).
std::string renderReportHtml(const ReportInputs& inputs);

}  // namespace stagecut
