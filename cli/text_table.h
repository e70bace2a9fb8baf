#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace stagecut {

/// A plain-text table for the terminal: a header row, aligned columns, an optional marker
/// column. Text columns align left, numbers right (chosen per column when it is added).
class TextTable {
 public:
  enum class Align { kLeft, kRight };

  void addColumn(std::string header, Align align);
  /// Adds a row; it must have one cell per column.
  void addRow(std::vector<std::string> cells);
  void print(std::ostream& out, const std::string& indent = "") const;

 private:
  std::vector<std::string> headers_;
  std::vector<Align> aligns_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace stagecut
