#pragma once

#include <optional>
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
  kDualPipeV,            ///< "dualpipe-v": DeepSeek's DualPipe cut in half, the same V as zb-v
};

/// Every schedule, in the order the CLI lists and runs them.
const std::vector<ScheduleKind>& allScheduleKinds();

/// "gpipe", "1f1b", "interleaved-1f1b", "zb-h1", "zb-v" or "dualpipe-v": the name flags, files
/// and charts use.
const char* scheduleName(ScheduleKind kind);

/// Every schedule's name, comma-separated in the CLI's order ("gpipe, 1f1b, ..., dualpipe-v"):
/// for help texts and messages.
std::string scheduleNameList();

/// The name PyTorch gives the schedule (torch.distributed.pipelining's Schedule<name> class,
/// torchtitan's `pipeline_parallel_schedule`): "GPipe", "1F1B", "Interleaved1F1B",
/// "ZBVZeroBubble", "DualPipeV"; "" for zb-h1, which PyTorch runs only inside its interleaved
/// zero-bubble schedule.
const char* pytorchScheduleName(ScheduleKind kind);

/// The schedule called `name`. Throws Error (input) naming the flag and the nearest name:
/// "--schedule: unknown schedule '1f1', did you mean '1f1b'?".
ScheduleKind parseScheduleName(const std::string& name);

/// Whether the schedule runs several model chunks per rank (interleaved-1f1b, zb-v, dualpipe-v).
bool runsChunks(ScheduleKind kind);

/// Whether the user picks the chunks per rank v (--chunks): interleaved-1f1b. A V (zb-v,
/// dualpipe-v) is always 2 chunks; the others run 1.
bool choosesChunks(ScheduleKind kind);

/// The chunks per rank interleaved-1f1b runs when the user names none (--chunks left out).
inline constexpr int kDefaultInterleavedChunks = 2;

/// The placements a search weighs on N = `ranks` ranks when the user names no chunk count
/// (compare, plan): 2, 3 and 4 chunks per rank for interleaved-1f1b, schedulePlacement's one for
/// the others.
std::vector<Placement> placementsToTry(ScheduleKind kind, int ranks);

/// How the schedule places its chunks on ranks: a V for zb-v and dualpipe-v, loop order for the
/// others.
Placement::Style chunkStyle(ScheduleKind kind);

/// The schedule that runs chunks placed in `style`: zb-v for a V, interleaved-1f1b for loop order.
ScheduleKind scheduleRunningChunks(Placement::Style style);

/// "zb-v or dualpipe-v" for a V, "interleaved-1f1b" for loop order: every schedule that runs
/// chunks placed in `style`, for the messages that name them.
std::string schedulesRunningChunks(Placement::Style style);

/// Whether `kind` runs a split whose chunks sit as `placement` says (v > 1): the same style and
/// as many chunks per rank as the schedule can run.
bool runsPlacement(ScheduleKind kind, const Placement& placement);

/// The placement of N = `ranks` ranks running `kind`: `chunks` per rank where the user chooses
/// them (interleaved-1f1b's --chunks, kDefaultInterleavedChunks when absent), 2 in a V for zb-v
/// and dualpipe-v, 1 for the others. The one place a chunk count becomes a placement. Throws
/// Error (input) naming --chunks for a count below 1, or a count the schedule does not run
/// ("--chunks 3: zb-v runs 2 model chunks per rank (a V); leave --chunks out").
Placement schedulePlacement(ScheduleKind kind, int ranks, std::optional<int> chunks = std::nullopt);

/// A schedule with the ranks and chunks it runs on: what a chart or a prediction is drawn for.
struct PlacedSchedule {
  ScheduleKind kind = ScheduleKind::kOneFOneB;
  Placement placement;
};

/// Each of `kinds` on N = `ranks` ranks as schedulePlacement places it, `chunks` (--chunks)
/// going to the schedules that let the user choose them. Throws Error (input) as
/// schedulePlacement does.
std::vector<PlacedSchedule> placeSchedules(const std::vector<ScheduleKind>& kinds, int ranks, std::optional<int> chunks);

/// Checks that `kind` runs `placement`'s chunks (schedulePlacement's rules: its style, its chunk
/// count). Throws Error (input) naming `source` (the split's file or flag), the placement and the
/// schedules that run it otherwise.
void checkRunsPlacement(ScheduleKind kind, const Placement& placement, const std::string& source);

/// "4 ranks", "4 ranks x 3 chunks" or "4 ranks x 2 chunks in a V": how messages and headers name
/// a placement.
std::string placementWords(const Placement& placement);

/// Whether the schedule needs the microbatch count to be a multiple of the stage count:
/// interleaved-1f1b, whose forwards run in groups of N microbatches per chunk.
bool needsMicrobatchesPerStageGroup(ScheduleKind kind);

/// The fewest microbatches the schedule runs on N = `ranks` ranks: 2N for dualpipe-v (as
/// DeepSeek's DualPipeV and PyTorch's ScheduleDualPipeV require), 1 for the others.
int fewestMicrobatches(ScheduleKind kind, int ranks);

/// Why `kind` cannot run M = `microbatches` on N = `ranks` ranks, as the words after the
/// schedule's name in a note that leaves it out ("needs the microbatches (6) a multiple of the
/// 4 stages", "needs the microbatches (6) at least twice the 4 stages"), or "" when it can. The
/// one test every caller that lists several schedules applies.
std::string microbatchCountProblem(ScheduleKind kind, int ranks, int microbatches);

/// Whether the schedule splits the backward into B (input gradient) and W (weight gradient).
bool splitsBackward(ScheduleKind kind);

}  // namespace stagecut
