#pragma once

#include <string>

#include "core/markup_text.h"

namespace stagecut::report {

// escapeMarkup() and svgNumber() come from core/markup_text.h, shared with the schedule's SVG.

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
