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

/// The most ops one trace holds, over all its schedules. A trace keeps every op (a chart can
/// aggregate, a trace cannot), about 140 bytes each and never over 512 with a memory track, so a
/// trace stays under 512 MiB, the size stagecut's readers take; Perfetto's UI loads about that
/// many events.
inline constexpr std::size_t kMaxChromeTraceOps = 1'000'000;

/// Throws Error (input) when a trace of `ops` ops would exceed kMaxChromeTraceOps; the one line
/// starts with `what` (the flag and its output) and ends with `fix`. For the commands to call
/// before they print or run anything.
void requireChromeTraceFits(std::size_t ops, const std::string& what, const std::string& fix);

/// A Chrome trace (the JSON object format that Perfetto and chrome://tracing open) of simulated
/// schedules: one process per schedule, one track per rank, one complete event per op named
/// "F3", "B3", "W3" with its microbatch, chunk and model stage as arguments. Simulated ms are
/// written as trace milliseconds (unit slots as 1 ms each). Refuses (requireChromeTraceFits)
/// more than kMaxChromeTraceOps ops.
std::string renderChromeTrace(const std::vector<SimulatedSchedule>& runs);

}  // namespace stagecut
