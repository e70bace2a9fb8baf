#pragma once

#include <string>

#include "schedule/pipeline_schedule.h"
#include "schedule/simulator.h"

namespace stagecut {

/// How a text Gantt chart is laid out.
struct AsciiGanttOptions {
  int width_columns = 80;         ///< the whole chart, rank labels included
  std::string time_unit = "ms";   ///< how simulated times are labelled ("ms", "units")
  /// The time the width stands for; 0: the schedule's own step. Charts drawn with the same
  /// value share a scale, so a shorter step is a shorter chart.
  double fit_ms = 0.0;
};

/// Draws a simulated step as text, a row per rank, time scaled to the width in steps of
/// 1, 2, 2.5 or 5 x 10^k per column. F cells carry the microbatch number, B cells '#', W cells
/// '=' (with the microbatch number in front where the op is wide enough), all-reduce cells 'A',
/// idle cells '.'.
/// Ends with a ruler and a legend line. `result` must come from simulate(schedule, ...).
std::string renderAsciiGantt(const Schedule& schedule, const SimulationResult& result,
                             const AsciiGanttOptions& options);

}  // namespace stagecut
