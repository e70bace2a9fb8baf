#include "schedule/schedule_kind.h"

#include "core/error.h"
#include "core/suggest.h"

namespace stagecut {

const std::vector<ScheduleKind>& allScheduleKinds() {
  static const std::vector<ScheduleKind> kinds = {ScheduleKind::kGpipe, ScheduleKind::kOneFOneB,
                                                  ScheduleKind::kInterleavedOneFOneB,
                                                  ScheduleKind::kZeroBubbleH1, ScheduleKind::kZeroBubbleV,
                                                  ScheduleKind::kDualPipeV};
  return kinds;
}

const char* scheduleName(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::kGpipe:
      return "gpipe";
    case ScheduleKind::kOneFOneB:
      return "1f1b";
    case ScheduleKind::kInterleavedOneFOneB:
      return "interleaved-1f1b";
    case ScheduleKind::kZeroBubbleH1:
      return "zb-h1";
    case ScheduleKind::kZeroBubbleV:
      return "zb-v";
    case ScheduleKind::kDualPipeV:
      return "dualpipe-v";
  }
  return "1f1b";
}

std::string scheduleNameList() {
  std::string list;
  for (ScheduleKind kind : allScheduleKinds()) list += (list.empty() ? "" : ", ") + std::string(scheduleName(kind));
  return list;
}

const char* pytorchScheduleName(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::kGpipe:
      return "GPipe";
    case ScheduleKind::kOneFOneB:
      return "1F1B";
    case ScheduleKind::kInterleavedOneFOneB:
      return "Interleaved1F1B";
    case ScheduleKind::kZeroBubbleH1:
      return "";
    case ScheduleKind::kZeroBubbleV:
      return "ZBVZeroBubble";
    case ScheduleKind::kDualPipeV:
      return "DualPipeV";
  }
  return "";
}

ScheduleKind parseScheduleName(const std::string& name) {
  std::vector<std::string> names;
  for (ScheduleKind kind : allScheduleKinds()) {
    if (name == scheduleName(kind)) return kind;
    names.push_back(scheduleName(kind));
  }
  throw Error("--schedule: unknown schedule '" + name + "'" + unknownNameHint(name, names));
}

bool runsChunks(ScheduleKind kind) {
  return kind == ScheduleKind::kInterleavedOneFOneB || chunkStyle(kind) == Placement::Style::kV;
}

bool choosesChunks(ScheduleKind kind) { return kind == ScheduleKind::kInterleavedOneFOneB; }

int chunksPerRank(ScheduleKind kind, int requested) {
  if (choosesChunks(kind)) return requested;
  return chunkStyle(kind) == Placement::Style::kV ? 2 : 1;
}

std::vector<int> chunkCountsToTry(ScheduleKind kind) {
  // Past 4 the bubble gain is small beside the messages each chunk adds (Megatron's own
  // examples stop at 4 to 5), and every v costs a search.
  if (choosesChunks(kind)) return {2, 3, 4};
  return {chunksPerRank(kind, 1)};
}

Placement::Style chunkStyle(ScheduleKind kind) {
  return kind == ScheduleKind::kZeroBubbleV || kind == ScheduleKind::kDualPipeV ? Placement::Style::kV
                                                                                : Placement::Style::kLoop;
}

Placement schedulePlacement(ScheduleKind kind, int ranks, int requested) {
  return Placement{ranks, chunksPerRank(kind, requested), chunkStyle(kind)};
}

ScheduleKind scheduleRunningChunks(Placement::Style style) {
  return style == Placement::Style::kV ? ScheduleKind::kZeroBubbleV : ScheduleKind::kInterleavedOneFOneB;
}

std::string schedulesRunningChunks(Placement::Style style) {
  std::string names;
  for (ScheduleKind kind : allScheduleKinds()) {
    if (!runsChunks(kind) || chunkStyle(kind) != style) continue;
    names += (names.empty() ? "" : " or ") + std::string(scheduleName(kind));
  }
  return names;
}

bool runsPlacement(ScheduleKind kind, const Placement& placement) {
  return runsChunks(kind) && chunkStyle(kind) == placement.style &&
         chunksPerRank(kind, placement.chunks_per_rank) == placement.chunks_per_rank;
}

bool needsMicrobatchesPerStageGroup(ScheduleKind kind) { return kind == ScheduleKind::kInterleavedOneFOneB; }

int fewestMicrobatches(ScheduleKind kind, int ranks) { return kind == ScheduleKind::kDualPipeV ? 2 * ranks : 1; }

std::string microbatchCountProblem(ScheduleKind kind, int ranks, int microbatches) {
  const std::string counts = "needs the microbatches (" + std::to_string(microbatches) + ") ";
  if (needsMicrobatchesPerStageGroup(kind) && ranks > 0 && microbatches % ranks != 0) {
    return counts + "a multiple of the " + std::to_string(ranks) + " stages";
  }
  if (microbatches < fewestMicrobatches(kind, ranks)) {
    return counts + "at least twice the " + std::to_string(ranks) + " stages";
  }
  return "";
}

bool splitsBackward(ScheduleKind kind) {
  return kind == ScheduleKind::kZeroBubbleH1 || kind == ScheduleKind::kZeroBubbleV || kind == ScheduleKind::kDualPipeV;
}

}  // namespace stagecut
