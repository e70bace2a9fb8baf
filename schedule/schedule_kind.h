#pragma once

#include <string>
#include <vector>

namespace stagecut {

/// The pipeline schedules stagecut generates, simulates and runs: the one vocabulary of every
/// part (the partitioner's memory term, the planner, the simulator, the runtime).
enum class ScheduleKind {
  kGpipe,                ///< "gpipe": all forwards, then all backwards
  kOneFOneB,             ///< "1f1b": PipeDream-Flush, as Megatron and DeepSpeed run it
  kInterleavedOneFOneB,  ///< "interleaved-1f1b": Megatron's virtual pipeline, v chunks per rank
  kZeroBubbleH1,         ///< "zb-h1": 1F1B with the backward split into B and W (Qi et al. 2023)
};

/// Every schedule, in the order the CLI lists and runs them.
const std::vector<ScheduleKind>& allScheduleKinds();

/// "gpipe", "1f1b", "interleaved-1f1b" or "zb-h1": the name flags, files and charts use.
const char* scheduleName(ScheduleKind kind);

/// The schedule called `name`. Throws Error (input) naming the flag and the nearest name:
/// "--schedule: unknown schedule '1f1', did you mean '1f1b'?".
ScheduleKind parseScheduleName(const std::string& name);

/// Whether the schedule runs several model chunks per rank (interleaved-1f1b).
bool runsChunks(ScheduleKind kind);

/// Whether the schedule splits the backward into B (input gradient) and W (weight gradient).
bool splitsBackward(ScheduleKind kind);

}  // namespace stagecut
