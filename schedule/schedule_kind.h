#pragma once

#include <string>
#include <vector>

#include "core/placement.h"

namespace stagecut {

/// The pipeline schedules stagecut generates, simulates and runs: the one vocabulary of every
/// part (the partitioner's memory term, the planner, the simulator, the runtime).
enum class ScheduleKind {
  kGpipe,                ///< "gpipe": all forwards, then all backwards
  kOneFOneB,             ///< "1f1b": PipeDream-Flush, as Megatron and DeepSpeed run it
  kInterleavedOneFOneB,  ///< "interleaved-1f1b": Megatron's virtual pipeline, v chunks per rank
  kZeroBubbleH1,         ///< "zb-h1": 1F1B with the backward split into B and W (Qi et al. 2023)
  kZeroBubbleV,          ///< "zb-v": two chunks per rank in a V, backward split (Qi et al. 2023, sec. 6)
};

/// Every schedule, in the order the CLI lists and runs them.
const std::vector<ScheduleKind>& allScheduleKinds();

/// "gpipe", "1f1b", "interleaved-1f1b", "zb-h1" or "zb-v": the name flags, files and charts use.
const char* scheduleName(ScheduleKind kind);

/// The schedule called `name`. Throws Error (input) naming the flag and the nearest name:
/// "--schedule: unknown schedule '1f1', did you mean '1f1b'?".
ScheduleKind parseScheduleName(const std::string& name);

/// Whether the schedule runs several model chunks per rank (interleaved-1f1b, zb-v).
bool runsChunks(ScheduleKind kind);

/// Whether the user picks the chunks per rank v (--chunks): interleaved-1f1b. zb-v's V is
/// always 2 chunks; the others run 1.
bool choosesChunks(ScheduleKind kind);

/// The chunks per rank the schedule runs when --chunks asks for `requested`: `requested` for
/// interleaved-1f1b, 2 for zb-v, 1 for the others.
int chunksPerRank(ScheduleKind kind, int requested);

/// How the schedule places its chunks on ranks: a V for zb-v, loop order for the others.
Placement::Style chunkStyle(ScheduleKind kind);

/// The schedule that runs chunks placed in `style`: zb-v for a V, interleaved-1f1b for loop order.
ScheduleKind scheduleRunningChunks(Placement::Style style);

/// Whether `kind` runs a split whose chunks sit as `placement` says (v > 1): the same style and
/// as many chunks per rank as the schedule can run.
bool runsPlacement(ScheduleKind kind, const Placement& placement);

/// The placement of N = `ranks` ranks running `kind` with --chunks `requested`.
Placement schedulePlacement(ScheduleKind kind, int ranks, int requested);

/// Whether the schedule needs the microbatch count to be a multiple of the stage count:
/// interleaved-1f1b, whose forwards run in groups of N microbatches per chunk.
bool needsMicrobatchesPerStageGroup(ScheduleKind kind);

/// Whether the schedule splits the backward into B (input gradient) and W (weight gradient).
bool splitsBackward(ScheduleKind kind);

}  // namespace stagecut
