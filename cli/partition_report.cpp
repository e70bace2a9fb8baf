#include "cli/partition_report.h"

#include <algorithm>
#include <cmath>

#include "cli/text_table.h"
#include "core/units.h"

namespace stagecut {

void printRecomputeTable(std::ostream& out, const std::vector<StageRecompute>& stages,
                         const PartitionOptions& options) {
  const bool recompute = options.recompute.mode != RecomputePolicy::Mode::kNone;
  const bool data_parallel = options.data_parallel > 1;
  TextTable table;
  table.addColumn("stage", TextTable::Align::kRight);
  if (recompute) {
    table.addColumn("recompute", TextTable::Align::kLeft);
    table.addColumn("memory without", TextTable::Align::kRight);
    table.addColumn("memory with", TextTable::Align::kRight);
    table.addColumn("saved", TextTable::Align::kRight);
    table.addColumn("+fwd ms/mb", TextTable::Align::kRight);
    table.addColumn("+ms/step", TextTable::Align::kRight);
  }
  if (data_parallel) {
    table.addColumn("all-reduce ms", TextTable::Align::kRight);
    table.addColumn("exposed ms", TextTable::Align::kRight);
  }
  double saved = 0.0, added = 0.0;
  for (std::size_t s = 0; s < stages.size(); ++s) {
    const StageRecompute& stage = stages[s];
    std::vector<std::string> row{std::to_string(s)};
    if (recompute) {
      row.push_back(stage.mode);
      row.push_back(formatBytes(static_cast<std::uint64_t>(std::llround(stage.memory_bytes_without))));
      row.push_back(formatBytes(static_cast<std::uint64_t>(std::llround(stage.memory_bytes_with))));
      // A stage of one big layer can need more with recomputation (its input kept, plus the
      // layer's activations while it reruns): say so rather than show 0.
      const double stage_saved = stage.savedBytes();
      row.push_back(stage_saved >= 0
                        ? formatBytes(static_cast<std::uint64_t>(std::llround(stage_saved)))
                        : "-" + formatBytes(static_cast<std::uint64_t>(std::llround(-stage_saved))));
      row.push_back(formatMs(stage.extra_ms));
      row.push_back(formatMs(stage.extra_ms * options.microbatches));
      saved += stage_saved;
      added += stage.extra_ms * options.microbatches;
    }
    if (data_parallel) {
      row.push_back(formatMs(stage.allreduce_ms));
      row.push_back(formatMs(stage.exposed_allreduce_ms));
    }
    table.addRow(row);
  }
  table.print(out, "  ");
  if (recompute) {
    out << "\n  recomputation " << (saved >= 0 ? "saves " : "costs ")
        << formatBytes(static_cast<std::uint64_t>(std::llround(std::abs(saved)))) << " over all stages for " << formatMs(added) << " ms more forward per step ("
        << options.microbatches << " microbatches; each stage's share of the step grows by its "
        << "+ms/step)\n";
  }
  if (data_parallel) {
    out << "  all-reduce: ring over " << options.data_parallel << " replicas of each stage, after "
        << "its last backward; exposed = what later stages' cool-down (stage index x its own "
        << "backward) cannot hide\n";
  }
}

std::vector<StageRecompute> stageRecompute(const Profile& profile, const PartitionOptions& options,
                                           const Partition& partition, const std::string& source) {
  return describeRecompute(buildCostModel(profile, options, source), partition.layersPerStage());
}

}  // namespace stagecut
