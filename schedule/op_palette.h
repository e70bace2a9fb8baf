#pragma once

#include <string>

#include "schedule/pipeline_schedule.h"

namespace stagecut {

/// A colour as red, green and blue from 0 to 255; fractional while it is being mixed.
struct Rgb {
  double r, g, b;
};

/// The colour of an op kind in every chart (the Gantt charts, the report's per-layer bars):
/// Tableau's blue, orange, green and red for F, B, W and A.
Rgb opKindColour(OpKind kind);

/// "#4e79a7": `colour` as SVG and CSS write it, each channel rounded.
std::string hexColour(Rgb colour);

}  // namespace stagecut
