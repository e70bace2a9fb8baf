#include "validation/validation_trace.h"

#include "schedule/chrome_trace.h"

namespace stagecut {

std::string validationTrace(const ValidationReport& report) {
  // The trace names each process after its schedule: two copies tell predicted from measured.
  Schedule predicted_ops = report.ops;
  predicted_ops.name = "predicted " + report.schedule;
  Schedule measured_ops = report.ops;
  measured_ops.name = "measured " + report.schedule;
  std::vector<Schedule> named;
  named.reserve(2 + report.measured_replicas.size());
  // Replica 0's ranks' memory at each op (the last point, the optimizer step, has no op).
  std::vector<std::vector<double>> predicted_memory, measured_memory;
  for (const RankComparison& rank : report.ranks) {
    if (rank.replica != 0) continue;
    const auto ops = static_cast<std::ptrdiff_t>(report.ops.ranks[static_cast<std::size_t>(rank.stage)].size());
    const auto take = [&](const std::vector<double>& points) {
      return points.size() > static_cast<std::size_t>(ops) ? std::vector<double>(points.begin(), points.begin() + ops)
                                                           : std::vector<double>{};
    };
    predicted_memory.push_back(take(rank.predicted_memory_bytes));
    measured_memory.push_back(take(rank.measured_memory_bytes));
  }
  std::vector<SimulatedSchedule> runs = {{&predicted_ops, &report.predicted, &predicted_memory},
                                         {&measured_ops, &report.measured, &measured_memory}};
  for (std::size_t d = 1; d < report.measured_replicas.size(); ++d) {
    named.push_back(report.ops);
    named.back().name = "measured " + report.schedule + " replica " + std::to_string(d);
    runs.push_back({&named.back(), &report.measured_replicas[d]});
  }
  if (report.recompute) {
    named.push_back(report.ops);
    named.back().name = "predicted " + report.schedule + " recompute";
    runs.push_back({&named.back(), &report.recompute->predicted});
    named.push_back(report.ops);
    named.back().name = "measured " + report.schedule + " recompute";
    runs.push_back({&named.back(), &report.recompute->measured});
  }
  return renderChromeTrace(runs);
}

}  // namespace stagecut
