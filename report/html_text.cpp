#include "report/html_text.h"

namespace stagecut::report {

std::string inlineSvgChart(const std::string& elements, double width, double height,
                           const std::string& label) {
  return "<svg class=\"chart\" role=\"img\" aria-label=\"" + escapeMarkup(label) + "\" viewBox=\"0 0 " +
         svgNumber(width) + " " + svgNumber(height) + "\" width=\"" + svgNumber(width) +
         "\" height=\"" + svgNumber(height) + "\">\n" + elements + "</svg>\n";
}

}  // namespace stagecut::report
