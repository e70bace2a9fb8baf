#pragma once

#include <string>

namespace stagecut::report {

/// Text made safe for HTML and SVG content and attribute values: & < > " ' escaped.
std::string escapeHtml(const std::string& text);

/// A coordinate or size for SVG attributes: at most two decimals, no trailing zeros.
std::string svgNumber(double value);

/// Appends SVG elements to a string; every text passed as `content` must already be escaped.
class SvgBuilder {
 public:
  void rect(double x, double y, double w, double h, const std::string& fill,
            const std::string& extra = "");
  void line(double x1, double y1, double x2, double y2, const std::string& stroke,
            double width = 1.0, const std::string& extra = "");
  void text(double x, double y, const std::string& content, const std::string& style);
  void raw(const std::string& text) { out_ += text; }
  /// Wraps the elements in an <svg> of the given size (scaled to the page by CSS); `label`
  /// becomes its accessible name.
  std::string finish(double width, double height, const std::string& label) const;

 private:
  std::string out_;
};

}  // namespace stagecut::report
