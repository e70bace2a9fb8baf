#include "cli/partition_table.h"

#include <cmath>

#include "cli/text_table.h"
#include "core/units.h"

namespace stagecut {

void printPartitionTable(std::ostream& out, const Partition& partition,
                     const std::vector<std::string>& layer_ranges) {
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
    table.addRow({std::to_string(s), layer_ranges.at(s), std::to_string(stage.layerCount()),
                  formatMs(stage.forward_ms), formatMs(stage.backward_ms), formatMs(stage.comm_ms),
                  formatMs(stage.cost_ms), formatCount(stage.params), formatBytes(stage.memory_bytes)});
  }
  table.print(out, "  ");
  out << "\n  bottleneck " << formatMs(partition.bottleneck_ms) << " ms (lower bound "
      << formatMs(partition.lower_bound_ms) << " ms), predicted step "
      << formatMs(partition.predicted_step_ms) << " ms, bubble "
      << formatPercent(partition.predicted_bubble) << "\n";
}

void printMemoryParts(std::ostream& out, const Partition& partition) {
  for (const StageCost& stage : partition.stages) {
    if (!stage.memory_parts) return;
  }
  TextTable table;
  for (const char* header : {"stage", "peak", "weights", "grads", "optimizer", "activations", "buffers", "transient"}) {
    table.addColumn(header, TextTable::Align::kRight);
  }
  const auto bytes = [](double value) { return formatBytes(static_cast<std::uint64_t>(std::llround(value))); };
  for (std::size_t s = 0; s < partition.stages.size(); ++s) {
    const StageCost& stage = partition.stages[s];
    const MemoryParts& parts = *stage.memory_parts;
    table.addRow({std::to_string(s), formatBytes(stage.memory_bytes), bytes(parts.weights), bytes(parts.gradients),
                  bytes(parts.optimizer), bytes(parts.activations), bytes(parts.buffers), bytes(parts.transient)});
  }
  out << "\n  memory at each stage's peak (docs/metrics.md): activations of the microbatches in flight, "
         "buffers sent and received, the op's temporaries\n";
  table.print(out, "  ");
}

std::vector<std::string> layerIndexRanges(const Partition& partition) {
  std::vector<std::string> ranges;
  for (const StageCost& stage : partition.stages) {
    ranges.push_back(std::to_string(stage.first) + "-" + std::to_string(stage.last));
  }
  return ranges;
}

std::vector<std::string> layerNameRanges(const Partition& partition, const Profile& profile) {
  std::vector<std::string> ranges;
  for (const StageCost& stage : partition.stages) {
    ranges.push_back(profile.layers[stage.first].name +
                     (stage.last > stage.first ? " .. " + profile.layers[stage.last].name : ""));
  }
  return ranges;
}

}  // namespace stagecut
