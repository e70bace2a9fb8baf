#include "schedule/schedule_kind.h"

#include "core/error.h"
#include "core/suggest.h"

namespace stagecut {

const std::vector<ScheduleKind>& allScheduleKinds() {
  static const std::vector<ScheduleKind> kinds = {ScheduleKind::kGpipe, ScheduleKind::kOneFOneB,
                                                  ScheduleKind::kInterleavedOneFOneB,
                                                  ScheduleKind::kZeroBubbleH1, ScheduleKind::kZeroBubbleV};
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
  }
  return "1f1b";
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
  return kind == ScheduleKind::kInterleavedOneFOneB || kind == ScheduleKind::kZeroBubbleV;
}

bool choosesChunks(ScheduleKind kind) { return kind == ScheduleKind::kInterleavedOneFOneB; }

int chunksPerRank(ScheduleKind kind, int requested) {
  if (choosesChunks(kind)) return requested;
  return kind == ScheduleKind::kZeroBubbleV ? 2 : 1;
}

Placement::Style chunkStyle(ScheduleKind kind) {
  return kind == ScheduleKind::kZeroBubbleV ? Placement::Style::kV : Placement::Style::kLoop;
}

Placement schedulePlacement(ScheduleKind kind, int ranks, int requested) {
  return Placement{ranks, chunksPerRank(kind, requested), chunkStyle(kind)};
}

ScheduleKind scheduleRunningChunks(Placement::Style style) {
  return style == Placement::Style::kV ? ScheduleKind::kZeroBubbleV : ScheduleKind::kInterleavedOneFOneB;
}

bool runsPlacement(ScheduleKind kind, const Placement& placement) {
  return runsChunks(kind) && chunkStyle(kind) == placement.style &&
         chunksPerRank(kind, placement.chunks_per_rank) == placement.chunks_per_rank;
}

bool needsMicrobatchesPerStageGroup(ScheduleKind kind) { return kind == ScheduleKind::kInterleavedOneFOneB; }

bool splitsBackward(ScheduleKind kind) {
  return kind == ScheduleKind::kZeroBubbleH1 || kind == ScheduleKind::kZeroBubbleV;
}

}  // namespace stagecut
