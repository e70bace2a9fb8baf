#include "report/html_text.h"

#include <cstdio>

namespace stagecut::report {

void SvgBuilder::rect(double x, double y, double w, double h, const std::string& fill,
                      const std::string& extra) {
  out_ += "<rect x=\"" + svgNumber(x) + "\" y=\"" + svgNumber(y) + "\" width=\"" + svgNumber(w) +
          "\" height=\"" + svgNumber(h) + "\" fill=\"" + fill + "\"" + extra + "/>\n";
}

void SvgBuilder::line(double x1, double y1, double x2, double y2, const std::string& stroke,
                      double width, const std::string& extra) {
  out_ += "<line x1=\"" + svgNumber(x1) + "\" y1=\"" + svgNumber(y1) + "\" x2=\"" +
          svgNumber(x2) + "\" y2=\"" + svgNumber(y2) + "\" stroke=\"" + stroke +
          "\" stroke-width=\"" + svgNumber(width) + "\"" + extra + "/>\n";
}

void SvgBuilder::text(double x, double y, const std::string& content, const std::string& style) {
  out_ += "<text x=\"" + svgNumber(x) + "\" y=\"" + svgNumber(y) + "\" " + style + ">" + content +
          "</text>\n";
}

std::string SvgBuilder::finish(double width, double height, const std::string& label) const {
  return "<svg class=\"chart\" role=\"img\" aria-label=\"" + escapeMarkup(label) + "\" viewBox=\"0 0 " +
         svgNumber(width) + " " + svgNumber(height) + "\" width=\"" + svgNumber(width) +
         "\" height=\"" + svgNumber(height) + "\">\n" + out_ + "</svg>\n";
}

}  // namespace stagecut::report
