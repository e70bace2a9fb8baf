#pragma once

#include <string>

#include "core/markup_text.h"

namespace stagecut::report {

// escapeMarkup(), svgNumber() and SvgBuilder come from core/markup_text.h, shared with the
// schedule's SVG.

/// `elements` (from SvgBuilder::take()) wrapped in an inline <svg> of the given size, scaled to
/// the page by CSS; `label` becomes its accessible name.
std::string inlineSvgChart(const std::string& elements, double width, double height,
                           const std::string& label);

}  // namespace stagecut::report
