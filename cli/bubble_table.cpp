#include "cli/bubble_table.h"

#include <algorithm>
#include <limits>
#include <set>
#include <string>

#include "cli/text_table.h"
#include "core/units.h"
#include "schedule/closed_form.h"

namespace stagecut {

void printBubbleLesson(std::ostream& out, int stages, int microbatches) {
  const double bubble = pipelineBubbleFraction(stages, microbatches);
  out << "Pipeline bubble of GPipe and 1F1B: N = " << stages << " stages, M = " << microbatches
      << " microbatches, equal stage costs, no communication\n";
  // In 64 bits: --stages and --microbatches may each be as large as an int.
  const long long slots = static_cast<long long>(microbatches) + stages - 1;
  out << "  (N-1)/(M+N-1) = " << stages - 1 << "/" << slots << " = "
      << formatPercent(bubble) << " of every step is idle while the pipeline fills and drains.\n\n";

  std::set<int> grid = {microbatches};
  const long long grid_end = std::max(64LL, 4LL * microbatches);
  for (long long m = 1; m <= grid_end && m <= std::numeric_limits<int>::max(); m *= 2) {
    grid.insert(static_cast<int>(m));
  }

  TextTable table;
  table.addColumn("", TextTable::Align::kLeft);
  table.addColumn("M", TextTable::Align::kRight);
  table.addColumn("step (F+B slots)", TextTable::Align::kRight);
  table.addColumn("bubble", TextTable::Align::kRight);
  table.addColumn("efficiency", TextTable::Align::kRight);
  for (int m : grid) {
    const double b = pipelineBubbleFraction(stages, m);
    table.addRow({m == microbatches ? ">" : "", std::to_string(m),
                  std::to_string(static_cast<long long>(pipelineStepSlots(stages, m))),
                  formatPercent(b), formatPercent(1.0 - b)});
  }
  table.print(out, "  ");
  out << "\nMore microbatches shrink the bubble, but each is smaller and runs the device less "
         "efficiently;\nan unbalanced split adds to it: the slowest stage sets every slot.\n";
}

}  // namespace stagecut
