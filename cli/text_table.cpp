#include "cli/text_table.h"

#include <algorithm>
#include <stdexcept>

namespace stagecut {

void TextTable::addColumn(std::string header, Align align) {
  headers_.push_back(std::move(header));
  aligns_.push_back(align);
}

void TextTable::addRow(std::vector<std::string> cells) {
  if (cells.size() != headers_.size()) {
    throw std::logic_error("TextTable row has " + std::to_string(cells.size()) + " cells for " +
                           std::to_string(headers_.size()) + " columns");
  }
  rows_.push_back(std::move(cells));
}

void TextTable::print(std::ostream& out, const std::string& indent) const {
  std::vector<std::size_t> widths(headers_.size());
  for (std::size_t c = 0; c < headers_.size(); ++c) {
    widths[c] = headers_[c].size();
    for (const auto& row : rows_) widths[c] = std::max(widths[c], row[c].size());
  }
  auto printRow = [&](const std::vector<std::string>& cells) {
    std::string line = indent;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      const std::string pad(widths[c] - cells[c].size(), ' ');
      if (c > 0) line += "  ";
      line += aligns_[c] == Align::kRight ? pad + cells[c] : cells[c] + pad;
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << '\n';
  };
  printRow(headers_);
  for (const auto& row : rows_) printRow(row);
}

}  // namespace stagecut
