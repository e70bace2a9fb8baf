#include "schedule/schedule_kind.h"

#include "core/error.h"
#include "core/suggest.h"

namespace stagecut {

const std::vector<ScheduleKind>& allScheduleKinds() {
  static const std::vector<ScheduleKind> kinds = {ScheduleKind::kGpipe, ScheduleKind::kOneFOneB,
                                                  ScheduleKind::kInterleavedOneFOneB,
                                                  ScheduleKind::kZeroBubbleH1};
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

bool runsChunks(ScheduleKind kind) { return kind == ScheduleKind::kInterleavedOneFOneB; }

bool splitsBackward(ScheduleKind kind) { return kind == ScheduleKind::kZeroBubbleH1; }

}  // namespace stagecut
