#pragma once

#include <string>
#include <utility>

namespace stagecut {

/// Text made safe for HTML and SVG content and attribute values: & < > " ' escaped.
std::string escapeMarkup(const std::string& text);

/// A coordinate or size for SVG attributes: at most two decimals, no trailing zeros, no "-0".
std::string svgNumber(double value);

/// Appends SVG elements to a string, coordinates through svgNumber(); every text passed as
/// `content` must already be escaped. Shared by the Gantt charts and the report's charts.
class SvgBuilder {
 public:
  void rect(double x, double y, double w, double h, const std::string& fill,
            const std::string& extra = "");
  void line(double x1, double y1, double x2, double y2, const std::string& stroke,
            double width = 1.0, const std::string& extra = "");
  void text(double x, double y, const std::string& content, const std::string& style);
  void raw(const std::string& text) { out_ += text; }
  /// The markup written so far, moved out: the builder is left empty.
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

}  // namespace stagecut
