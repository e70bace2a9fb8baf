#include "cli/partition_report.h"

#include <cmath>
#include <cstdio>

#include "cli/text_table.h"
#include "core/units.h"

namespace stagecut {

std::string formatSignedPercent(double fraction) {
  char buffer[32];
  const double percent = 100.0 * fraction;
  std::snprintf(buffer, sizeof buffer, "%+.1f%%", std::fabs(percent) < 0.05 ? 0.0 : percent);
  return std::string(buffer) == "+0.0%" ? "0.0%" : buffer;
}

void printPartitionTable(std::ostream& out, const Partition& partition, const Profile& profile) {
  TextTable table;
  table.addColumn("stage", TextTable::Align::kRight);
  table.addColumn("layers", TextTable::Align::kLeft);
  table.addColumn("count", TextTable::Align::kRight);
  table.addColumn("fwd ms", TextTable::Align::kRight);
  table.addColumn("bwd ms", TextTable::Align::kRight);
  table.addColumn("comm ms", TextTable::Align::kRight);
  table.addColumn("cost ms", TextTable::Align::kRight);
  table.addColumn("params", TextTable::Align::kRight);
  table.addColumn("memory", TextTable::Align::kRight);
  for (std::size_t s = 0; s < partition.stages.size(); ++s) {
    const StageCost& stage = partition.stages[s];
    const std::string range = profile.layers[stage.first].name +
                              (stage.last > stage.first ? " .. " + profile.layers[stage.last].name : "");
    table.addRow({std::to_string(s), range, std::to_string(stage.layerCount()),
                  formatMs(stage.forward_ms), formatMs(stage.backward_ms), formatMs(stage.comm_ms),
                  formatMs(stage.cost_ms), formatCount(stage.params), formatBytes(stage.memory_bytes)});
  }
  table.print(out, "  ");
  out << "\n  bottleneck " << formatMs(partition.bottleneck_ms) << " ms (lower bound "
      << formatMs(partition.lower_bound_ms) << " ms), predicted step "
      << formatMs(partition.predicted_step_ms) << " ms, bubble "
      << formatPercent(partition.predicted_bubble) << "\n";
}

}  // namespace stagecut
