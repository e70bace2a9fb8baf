#include "cli/partition_table.h"

#include <cmath>

#include "cli/text_table.h"
#include "core/units.h"

namespace stagecut {

namespace {

// A chunked split's ranks: each one's chunks, layers, load (the sum of its chunks' costs) and peak.
void printRankLoads(std::ostream& out, const Partition& partition) {
  const Placement placement = partition.rankPlacement();
  TextTable table;
  for (const char* header : {"rank", "chunks", "layers", "load ms", "memory"}) {
    table.addColumn(header, std::string(header) == "chunks" ? TextTable::Align::kLeft : TextTable::Align::kRight);
  }
  for (int r = 0; r < placement.ranks; ++r) {
    std::vector<int> chunks;
    int layers = 0;
    double load = 0.0;
    for (int local = 0; local < placement.chunks_per_rank; ++local) {
      const int chunk = placement.chunkAt(r, local);
      const StageCost& stage = partition.stages[static_cast<std::size_t>(chunk)];
      chunks.push_back(chunk);
      layers += stage.layerCount();
      load += stage.cost_ms;
    }
    table.addRow({std::to_string(r), joinNumbers(chunks), std::to_string(layers), formatMs(load),
                  formatBytes(partition.stages[static_cast<std::size_t>(placement.chunkAt(r, 0))].memory_bytes)});
  }
  out << "\n  per rank: the sum of its chunks, and its peak over the step\n";
  table.print(out, "  ");
}

}  // namespace

void printPartitionTable(std::ostream& out, const Partition& partition,
                     const std::vector<std::string>& layer_ranges) {
  const Placement placement = partition.rankPlacement();
  TextTable table;
  table.addColumn(placement.chunked() ? "chunk" : "stage", TextTable::Align::kRight);
  if (placement.chunked()) table.addColumn("rank", TextTable::Align::kRight);
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
    std::vector<std::string> row{std::to_string(s)};
    if (placement.chunked()) row.push_back(std::to_string(placement.rankOf(static_cast<int>(s))));
    for (const std::string& cell :
         {layer_ranges.at(s), std::to_string(stage.layerCount()), formatMs(stage.forward_ms), formatMs(stage.backward_ms),
          formatMs(stage.comm_ms), formatMs(stage.cost_ms), formatCount(stage.params),
          placement.chunked() ? std::string("rank's") : formatBytes(stage.memory_bytes)}) {
      row.push_back(cell);
    }
    table.addRow(row);
  }
  table.print(out, "  ");
  if (placement.chunked()) printRankLoads(out, partition);
  out << "\n  " << (placement.chunked() ? "slowest rank " : "bottleneck ") << formatMs(partition.bottleneck_ms)
      << " ms (lower bound "
      << formatMs(partition.lower_bound_ms) << " ms), predicted step "
      << formatMs(partition.predicted_step_ms) << " ms, bubble "
      << formatPercent(partition.predicted_bubble) << "\n";
}

void printMemoryParts(std::ostream& out, const Partition& partition) {
  for (const StageCost& stage : partition.stages) {
    if (!stage.memory_parts) return;
  }
  // A chunked split's chunks carry their rank's peak: one row per rank.
  const Placement placement = partition.rankPlacement();
  TextTable table;
  for (const char* header :
       {placement.chunked() ? "rank" : "stage", "peak", "weights", "grads", "optimizer", "activations", "buffers", "transient"}) {
    table.addColumn(header, TextTable::Align::kRight);
  }
  const auto bytes = [](double value) { return formatBytes(static_cast<std::uint64_t>(std::llround(value))); };
  for (int s = 0; s < placement.ranks; ++s) {
    const StageCost& stage = partition.stages[static_cast<std::size_t>(placement.chunkAt(s, 0))];
    const MemoryParts& parts = *stage.memory_parts;
    table.addRow({std::to_string(s), formatBytes(stage.memory_bytes), bytes(parts.weights), bytes(parts.gradients),
                  bytes(parts.optimizer), bytes(parts.activations), bytes(parts.buffers), bytes(parts.transient)});
  }
  out << "\n  memory at each " << (placement.chunked() ? "rank" : "stage") << "'s peak (docs/metrics.md): activations of the microbatches in flight, "
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
