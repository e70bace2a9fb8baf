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
  std::vector<SimulatedSchedule> runs = {{&predicted_ops, &report.predicted}, {&measured_ops, &report.measured}};
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
