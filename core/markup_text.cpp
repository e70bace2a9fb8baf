#include "core/markup_text.h"

#include <cstdio>

namespace stagecut {

std::string escapeMarkup(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string svgNumber(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2f", value);
  std::string text = buffer;
  while (text.back() == '0') text.pop_back();
  if (text.back() == '.') text.pop_back();
  if (text == "-0") text = "0";
  return text;
}

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

}  // namespace stagecut
