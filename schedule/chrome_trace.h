#pragma once

#include <string>
#include <vector>

#include "schedule/pipeline_schedule.h"
#include "schedule/simulator.h"

namespace stagecut {

/// One simulated schedule to put in a trace or a chart: the op lists and what the simulator
/// made of them. Both must outlive the view.
struct SimulatedSchedule {
  const Schedule* schedule = nullptr;
  const SimulationResult* result = nullptr;
  /// Optional: per rank, the bytes at the peak of each of its ops, drawn as a counter track
  /// ("memory rank r", MiB) that steps at each op's start.
  const std::vector<std::vector<double>>* memory_bytes = nullptr;
};

/// A Chrome trace (the JSON object format that Perfetto and chrome://tracing open) of simulated
/// schedules: one process per schedule, one track per rank, one complete event per op named
/// "F3", "B3", "W3" with its microbatch, chunk and model stage as arguments. Simulated ms are
/// written as trace milliseconds (unit slots as 1 ms each).
std::string renderChromeTrace(const std::vector<SimulatedSchedule>& runs);

}  // namespace stagecut
