#include "cli/bubble_table.h"

#include <algorithm>
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
  out << "  (N-1)/(M+N-1) = " << stages - 1 << "/" << microbatches + stages - 1 << " = "
      << formatPercent(bubble) << " of every step is idle while the pipeline fills and drains.\n\n";

  std::set<int> grid = {microbatches};
  const int grid_end = std::max(64, 4 * microbatches);
  for (int m = 1; m <= grid_end && m > 0; m *= 2) grid.insert(m);

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
