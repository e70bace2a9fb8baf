#include "schedule/schedule_kind.h"

#include <algorithm>

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

namespace {

// What each schedule is, in one switch the compiler holds to every kind: a new kind that is not
// described here does not build (-Wswitch), instead of running as 1F1B.
struct ScheduleTraits {
  Placement::Style style;           ///< how its chunks sit on the ranks (kLoop for one chunk)
  bool chooses_chunks;              ///< the user's v (interleaved); else fixed by the style
  bool splits_backward;             ///< B and W apart (zero bubble)
  bool microbatches_per_group;      ///< M a multiple of N (Megatron's interleaving)
  int fewest_microbatches_per_rank; ///< M at least this x N (DualPipeV's two directions); 0: any
};

ScheduleTraits scheduleTraits(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::kGpipe:
    case ScheduleKind::kOneFOneB:
      return {Placement::Style::kLoop, false, false, false, 0};
    case ScheduleKind::kInterleavedOneFOneB:
      return {Placement::Style::kLoop, true, false, true, 0};
    case ScheduleKind::kZeroBubbleH1:
      return {Placement::Style::kLoop, false, true, false, 0};
    case ScheduleKind::kZeroBubbleV:
      return {Placement::Style::kV, false, true, false, 0};
    case ScheduleKind::kDualPipeV:
      return {Placement::Style::kV, false, true, false, 2};
  }
  throw Error("unknown schedule kind " + std::to_string(static_cast<int>(kind)));
}

}  // namespace

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
  return choosesChunks(kind) || chunkStyle(kind) == Placement::Style::kV;
}

bool choosesChunks(ScheduleKind kind) { return scheduleTraits(kind).chooses_chunks; }

namespace {

// The chunks per rank a schedule runs whatever the user asks: 2 in a V, 1 without chunks; 0 for
// interleaved-1f1b, whose count the user chooses.
int fixedChunksPerRank(ScheduleKind kind) {
  if (choosesChunks(kind)) return 0;
  return chunkStyle(kind) == Placement::Style::kV ? 2 : 1;
}

}  // namespace

std::vector<Placement> placementsToTry(ScheduleKind kind, int ranks) {
  // Past 4 the bubble gain is small beside the messages each chunk adds (Megatron's own
  // examples stop at 4 to 5), and every v costs a search.
  if (!choosesChunks(kind)) return {schedulePlacement(kind, ranks)};
  std::vector<Placement> placements;
  for (int chunks : {2, 3, 4}) placements.push_back(schedulePlacement(kind, ranks, chunks));
  return placements;
}

Placement::Style chunkStyle(ScheduleKind kind) {
  return scheduleTraits(kind).style;
}

Placement schedulePlacement(ScheduleKind kind, int ranks, std::optional<int> chunks) {
  const int fixed = fixedChunksPerRank(kind);
  if (chunks && *chunks < 1) {
    throw Error("--chunks " + std::to_string(*chunks) + ": each rank needs at least 1 model chunk");
  }
  if (chunks && fixed > 0 && *chunks != fixed) {
    throw Error("--chunks " + std::to_string(*chunks) + ": " + scheduleName(kind) +
                (fixed == 1 ? std::string(" runs one model chunk per rank; add --schedule interleaved-1f1b")
                            : " runs " + std::to_string(fixed) + " model chunks per rank (a V); leave --chunks out"));
  }
  const int per_rank = fixed > 0 ? fixed : chunks.value_or(kDefaultInterleavedChunks);
  return Placement{ranks, per_rank, chunkStyle(kind)};
}

std::vector<PlacedSchedule> placeSchedules(const std::vector<ScheduleKind>& kinds, int ranks, std::optional<int> chunks) {
  std::vector<PlacedSchedule> placed;
  for (ScheduleKind kind : kinds) {
    placed.push_back({kind, schedulePlacement(kind, ranks, choosesChunks(kind) ? chunks : std::nullopt)});
  }
  return placed;
}

void checkRunsPlacement(ScheduleKind kind, const Placement& placement, const std::string& source) {
  const int fixed = fixedChunksPerRank(kind);
  const bool runs = chunkStyle(kind) == placement.style &&
                    (fixed == 0 ? placement.chunks_per_rank >= 1 : placement.chunks_per_rank == fixed);
  if (runs) return;
  if (!placement.chunked()) {
    throw Error(source + ": places one chunk on each rank; " + scheduleName(kind) + " runs " +
                std::to_string(fixed) + " per rank " + placementStyleWords(chunkStyle(kind)) +
                "; split for it with partition --schedule " + scheduleName(kind));
  }
  throw Error(source + ": places " + std::to_string(placement.chunks_per_rank) + " chunks on each rank " +
              placementStyleWords(placement.style) + "; " + scheduleName(kind) + " runs " +
              (runsChunks(kind) ? std::string("its chunks ") + placementStyleWords(chunkStyle(kind)) : "one") +
              "; use --schedule " + schedulesRunningChunks(placement.style));
}

std::string placementWords(const Placement& placement) {
  std::string words = std::to_string(placement.ranks) + (placement.ranks == 1 ? " rank" : " ranks");
  if (!placement.chunked()) return words;
  words += " x " + std::to_string(placement.chunks_per_rank) + " chunks";
  return placement.style == Placement::Style::kV ? words + " in a V" : words;
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
  const int fixed = fixedChunksPerRank(kind);
  return runsChunks(kind) && chunkStyle(kind) == placement.style &&
         (fixed == 0 || placement.chunks_per_rank == fixed);
}

bool needsMicrobatchesPerStageGroup(ScheduleKind kind) { return scheduleTraits(kind).microbatches_per_group; }

int fewestMicrobatches(ScheduleKind kind, int ranks) {
  return std::max(1, scheduleTraits(kind).fewest_microbatches_per_rank * ranks);
}

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

bool splitsBackward(ScheduleKind kind) { return scheduleTraits(kind).splits_backward; }

}  // namespace stagecut
