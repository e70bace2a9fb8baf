#pragma once

#include <string>

namespace stagecut {

/// Text made safe for HTML and SVG content and attribute values: & < > " ' escaped.
std::string escapeMarkup(const std::string& text);

/// A coordinate or size for SVG attributes: at most two decimals, no trailing zeros, no "-0".
std::string svgNumber(double value);

}  // namespace stagecut
