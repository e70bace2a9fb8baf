#pragma once

#include <string>

namespace stagecut {

/// A one-line progress bar on stderr, redrawn in place, shown only when stderr is a terminal
/// (so logs and pipes stay clean).
class ProgressBar {
 public:
  ProgressBar();
  ~ProgressBar();
  /// Redraws: a bar for `fraction` (0..1) followed by `text`.
  void update(double fraction, const std::string& text);
  /// Erases the line.
  void finish();

 private:
  bool enabled_;
  bool drawn_ = false;
};

}  // namespace stagecut
