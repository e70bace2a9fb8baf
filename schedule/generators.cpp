#include "schedule/generators.h"

#include <algorithm>
#include <deque>
#include <utility>

#include "core/error.h"
#include "core/suggest.h"

namespace stagecut {

void checkPipelineShape(const Placement& placement, int microbatches) {
  if (placement.ranks < 1) {
    throw Error("--stages " + std::to_string(placement.ranks) + ": a pipeline needs at least 1 stage");
  }
  if (microbatches < 1) {
    throw Error("--microbatches " + std::to_string(microbatches) +
                ": a step needs at least 1 microbatch");
  }
  if (placement.chunks_per_rank < 1) {
    throw Error("--chunks " + std::to_string(placement.chunks_per_rank) + ": each rank needs at least 1 model chunk");
  }
}

namespace {

// Ops per step that a schedule may hold: 2^22 forward ops (128 stages x 32768 microbatches) is
// past any real pipeline and still a few hundred MB with its backward ops; beyond it a mistyped
// flag would exhaust memory before saying anything.
constexpr double kMostForwardOps = 4194304;

void checkScheduleSize(const Placement& placement, int microbatches) {
  const double ops = static_cast<double>(placement.chunkCount()) * microbatches;
  if (ops <= kMostForwardOps) return;
  // --chunks only where the user gave it: a V's two chunks are the schedule's own.
  const bool chosen = placement.chunked() && placement.style == Placement::Style::kLoop;
  throw Error("--stages " + std::to_string(placement.ranks) + " --microbatches " + std::to_string(microbatches) +
              (chosen ? " --chunks " + std::to_string(placement.chunks_per_rank) : std::string()) + ": " +
              std::to_string(static_cast<long long>(ops)) +
              " forward ops per step; stagecut schedules at most 4194304 (stages x microbatches" +
              (placement.chunked() ? " x chunks" : "") + ")");
}

Schedule emptySchedule(ScheduleKind kind, const Placement& placement, int microbatches) {
  checkPipelineShape(placement, microbatches);
  checkScheduleSize(placement, microbatches);
  Schedule schedule;
  schedule.name = scheduleName(kind);
  schedule.placement = placement;
  schedule.microbatches = microbatches;
  schedule.splits_backward = splitsBackward(kind);
  schedule.ranks.resize(static_cast<std::size_t>(placement.ranks));
  return schedule;
}

}  // namespace

const std::vector<std::string>& scheduleNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> list;
    for (ScheduleKind kind : allScheduleKinds()) list.push_back(scheduleName(kind));
    return list;
  }();
  return names;
}

std::vector<ScheduleKind> parseScheduleList(const std::string& list) {
  std::vector<ScheduleKind> kinds;
  const auto add = [&kinds](ScheduleKind kind) {
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) kinds.push_back(kind);
  };
  std::size_t begin = 0;
  while (begin <= list.size()) {
    const std::size_t comma = std::min(list.find(',', begin), list.size());
    const std::string name = list.substr(begin, comma - begin);
    begin = comma + 1;
    if (name.empty()) continue;
    if (name == "all") {
      for (ScheduleKind kind : allScheduleKinds()) add(kind);
      continue;
    }
    try {
      add(parseScheduleName(name));
    } catch (const Error&) {
      std::vector<std::string> candidates = scheduleNames();
      candidates.push_back("all");
      throw Error("--schedule: unknown schedule '" + name + "'" + unknownNameHint(name, candidates));
    }
  }
  if (kinds.empty()) {
    throw Error("--schedule \"" + list + "\": no schedule named; use e.g. --schedule gpipe,1f1b "
                "or --schedule all");
  }
  return kinds;
}

Schedule generateSchedule(ScheduleKind kind, const Placement& placement, int microbatches) {
  checkPipelineShape(placement, microbatches);
  checkRunsPlacement(kind, placement, "--schedule " + std::string(scheduleName(kind)));
  const int stages = placement.ranks;
  switch (kind) {
    case ScheduleKind::kGpipe:
      return generateGpipe(stages, microbatches);
    case ScheduleKind::kOneFOneB:
      return generateOneFOneB(stages, microbatches);
    case ScheduleKind::kInterleavedOneFOneB:
      return generateInterleavedOneFOneB(placement, microbatches);
    case ScheduleKind::kZeroBubbleH1:
      return generateZeroBubbleH1(stages, microbatches);
    case ScheduleKind::kZeroBubbleV:
      return generateZeroBubbleV(stages, microbatches);
    case ScheduleKind::kDualPipeV:
      break;
  }
  return generateDualPipeV(stages, microbatches);
}

Schedule generateSchedule(const std::string& name, int ranks, int microbatches, std::optional<int> chunks) {
  const ScheduleKind kind = parseScheduleName(name);
  return generateSchedule(kind, schedulePlacement(kind, ranks, chunks), microbatches);
}

Schedule generateGpipe(int stages, int microbatches) {
  Schedule schedule = emptySchedule(ScheduleKind::kGpipe, Placement::loop(stages, 1), microbatches);
  for (RankOps& ops : schedule.ranks) {
    ops.reserve(2 * static_cast<std::size_t>(microbatches));
    for (int m = 0; m < microbatches; ++m) ops.push_back({OpKind::kForward, m, 0});
    // Autograd over the concatenated microbatches meets the last one first (as torchgpipe runs).
    for (int m = microbatches - 1; m >= 0; --m) ops.push_back({OpKind::kBackward, m, 0});
  }
  return schedule;
}

Schedule generateOneFOneB(int stages, int microbatches) {
  Schedule schedule = emptySchedule(ScheduleKind::kOneFOneB, Placement::loop(stages, 1), microbatches);
  for (int rank = 0; rank < stages; ++rank) {
    RankOps& ops = schedule.ranks[rank];
    ops.reserve(2 * static_cast<std::size_t>(microbatches));
    const int warmup = std::min(stages - 1 - rank, microbatches);
    for (int m = 0; m < warmup; ++m) ops.push_back({OpKind::kForward, m, 0});
    for (int m = warmup; m < microbatches; ++m) {
      ops.push_back({OpKind::kForward, m, 0});
      ops.push_back({OpKind::kBackward, m - warmup, 0});
    }
    for (int m = microbatches - warmup; m < microbatches; ++m) {
      ops.push_back({OpKind::kBackward, m, 0});
    }
  }
  return schedule;
}

Schedule generateInterleavedOneFOneB(const Placement& placement, int microbatches) {
  checkPipelineShape(placement, microbatches);
  checkScheduleSize(placement, microbatches);
  const int stages = placement.ranks;
  const int chunks = placement.chunks_per_rank;
  if (!microbatchCountProblem(ScheduleKind::kInterleavedOneFOneB, stages, microbatches).empty()) {
    const int lower = microbatches / stages * stages;
    const std::string fix = lower > 0 ? std::to_string(lower) + " or " : "";
    throw Error("--microbatches " + std::to_string(microbatches) +
                ": interleaved-1f1b needs a multiple of the pipeline's " + std::to_string(stages) +
                " stages; use " + fix + std::to_string(lower + stages));
  }
  if (chunks == 1) {
    Schedule schedule = generateOneFOneB(stages, microbatches);
    schedule.name = scheduleName(ScheduleKind::kInterleavedOneFOneB);
    return schedule;
  }
  Schedule schedule = emptySchedule(ScheduleKind::kInterleavedOneFOneB, placement, microbatches);
  const int total = microbatches * chunks;
  const int group = stages * chunks;
  // The k-th forward of a rank: microbatches go in groups of N through chunk 0, then the same
  // group through chunk 1, and so on; backwards walk the chunks in reverse.
  auto forwardOp = [&](int k) {
    return PipelineOp{OpKind::kForward, k / group * stages + k % stages, k % group / stages};
  };
  auto backwardOp = [&](int k) {
    return PipelineOp{OpKind::kBackward, k / group * stages + k % stages,
                      chunks - 1 - k % group / stages};
  };
  for (int rank = 0; rank < stages; ++rank) {
    RankOps& ops = schedule.ranks[rank];
    ops.reserve(2 * static_cast<std::size_t>(total));
    // Megatron's warm-up: enough forwards that the first backward of the last chunk can arrive
    // (the 2 per later rank is its forward and backward slot, the (v - 1) N the earlier chunks).
    const int warmup = std::min((stages - rank - 1) * 2 + (chunks - 1) * stages, total);
    for (int k = 0; k < warmup; ++k) ops.push_back(forwardOp(k));
    for (int k = warmup; k < total; ++k) {
      ops.push_back(forwardOp(k));
      ops.push_back(backwardOp(k - warmup));
    }
    for (int k = total - warmup; k < total; ++k) ops.push_back(backwardOp(k));
  }
  return schedule;
}

Schedule generateZeroBubbleH1(int stages, int microbatches) {
  Schedule schedule = emptySchedule(ScheduleKind::kZeroBubbleH1, Placement::loop(stages, 1), microbatches);
  for (int rank = 0; rank < stages; ++rank) {
    RankOps& ops = schedule.ranks[rank];
    ops.reserve(3 * static_cast<std::size_t>(microbatches));
    int next_forward = 0, next_backward = 0, next_weight = 0;
    const int warmup = std::min(stages - 1 - rank, microbatches);
    while (next_forward < warmup) ops.push_back({OpKind::kForward, next_forward++, 0});
    // Rank r's first r backwards keep their W: later ranks start their backwards earlier than
    // rank 0 and would otherwise wait, so their W fills the cool-down instead.
    for (int deferred = 0; deferred < rank && next_forward < microbatches; ++deferred) {
      ops.push_back({OpKind::kForward, next_forward++, 0});
      ops.push_back({OpKind::kBackward, next_backward++, 0});
    }
    while (next_forward < microbatches) {
      ops.push_back({OpKind::kForward, next_forward++, 0});
      ops.push_back({OpKind::kBackward, next_backward++, 0});
      ops.push_back({OpKind::kWeight, next_weight++, 0});
    }
    while (next_backward < microbatches) {
      ops.push_back({OpKind::kBackward, next_backward++, 0});
      ops.push_back({OpKind::kWeight, next_weight++, 0});
    }
    while (next_weight < microbatches) ops.push_back({OpKind::kWeight, next_weight++, 0});
  }
  return schedule;
}

Schedule generateZeroBubbleV(int stages, int microbatches) {
  Schedule schedule =
      emptySchedule(ScheduleKind::kZeroBubbleV, schedulePlacement(ScheduleKind::kZeroBubbleV, stages), microbatches);
  // The order is planned for at least 2N - 1 microbatches, the most the V holds at once, and the
  // ops of microbatches past M are then left out, as PyTorch's ScheduleZBVZeroBubble does: the
  // remaining order still pairs every send with its receive (the message-order proof checks it).
  const int planned = std::max(2 * stages - 1, microbatches);
  for (int rank = 0; rank < stages; ++rank) {
    RankOps& ops = schedule.ranks[rank];
    ops.reserve(6 * static_cast<std::size_t>(microbatches));
    int next[3][2] = {{0, 0}, {0, 0}, {0, 0}};  // the next microbatch per op kind (F, B, W) and local chunk
    const auto add = [&](OpKind kind, int chunk) {
      int& microbatch = next[static_cast<int>(kind)][chunk];
      if (microbatch < microbatches) ops.push_back({kind, microbatch, chunk});
      ++microbatch;
    };
    // A microbatch's whole pass through one chunk, as the V runs chunk 1 once its turn is reached.
    const auto forwardBackwardWeight = [&](int chunk) {
      for (OpKind kind : {OpKind::kForward, OpKind::kBackward, OpKind::kWeight}) add(kind, chunk);
    };
    const int* forward = next[static_cast<int>(OpKind::kForward)];
    const int* backward = next[static_cast<int>(OpKind::kBackward)];
    const int* weight = next[static_cast<int>(OpKind::kWeight)];
    // Warm-up: fill the V's way down (chunk 0) and back up (chunk 1); a later rank meets the
    // turn sooner, so it starts chunk 1 and its backwards earlier.
    for (int i = 0; i < 2 * (stages - rank) - 1; ++i) add(OpKind::kForward, 0);
    for (int i = 0; i < rank; ++i) {
      add(OpKind::kForward, 1);
      add(OpKind::kForward, 0);
    }
    for (int i = 0; i < stages - rank; ++i) forwardBackwardWeight(1);
    while (forward[1] < forward[0] || forward[0] < planned) {
      if (forward[0] < planned) add(OpKind::kForward, 0);
      add(OpKind::kBackward, 0);
      add(OpKind::kWeight, 0);
      forwardBackwardWeight(1);
    }
    // Cool-down: the input gradients first, so the ranks below are not kept waiting; the
    // weight gradients fill the time the drain would leave idle.
    for (int i = 0; i < rank; ++i) {
      add(OpKind::kBackward, 0);
      add(OpKind::kBackward, 1);
    }
    for (int i = 0; i < stages - rank; ++i) {
      add(OpKind::kBackward, 0);
      add(OpKind::kWeight, 0);
    }
    while (weight[1] < backward[1]) add(OpKind::kWeight, 1);
    while (weight[0] < backward[0]) add(OpKind::kWeight, 0);
  }
  return schedule;
}

Schedule generateDualPipeV(int stages, int microbatches) {
  const Placement placement = schedulePlacement(ScheduleKind::kDualPipeV, stages);
  checkPipelineShape(placement, microbatches);
  const int fewest = fewestMicrobatches(ScheduleKind::kDualPipeV, stages);
  if (microbatches < fewest) {
    throw Error("--microbatches " + std::to_string(microbatches) + ": dualpipe-v needs at least 2N = " +
                std::to_string(fewest) + " microbatches on " + std::to_string(stages) +
                " stages (DualPipeV fills both arms of the V before its steady state); use --microbatches " +
                std::to_string(fewest) + " or more, or zb-v");
  }
  Schedule schedule = emptySchedule(ScheduleKind::kDualPipeV, placement, microbatches);
  for (int rank = 0; rank < stages; ++rank) {
    RankOps& ops = schedule.ranks[rank];
    ops.reserve(6 * static_cast<std::size_t>(microbatches));
    int next_forward[2] = {0, 0};
    int next_backward[2] = {0, 0};
    std::deque<std::pair<int, int>> deferred_weights;  // (microbatch, chunk) of split backwards, oldest first
    const auto forward = [&](int chunk) { ops.push_back({OpKind::kForward, next_forward[chunk]++, chunk}); };
    // A whole backward runs its W at once; a split one leaves W for a later slot.
    const auto backward = [&](int chunk, bool whole) {
      const int microbatch = next_backward[chunk]++;
      ops.push_back({OpKind::kBackward, microbatch, chunk});
      if (whole) {
        ops.push_back({OpKind::kWeight, microbatch, chunk});
      } else {
        deferred_weights.emplace_back(microbatch, chunk);
      }
    };
    const auto deferredWeight = [&] {
      if (deferred_weights.empty()) return;
      ops.push_back({OpKind::kWeight, deferred_weights.front().first, deferred_weights.front().second});
      deferred_weights.pop_front();
    };
    const int later_ranks = stages - rank - 1;
    for (int i = 0; i < 2 * later_ranks; ++i) forward(0);
    for (int i = 0; i <= rank; ++i) {
      forward(0);
      forward(1);
    }
    for (int i = 0; i < later_ranks; ++i) {
      backward(1, false);
      deferredWeight();
      forward(1);
    }
    for (int i = 0; i < microbatches - 2 * stages + rank + 1; ++i) {
      forward(0);
      backward(1, true);
      forward(1);
      backward(0, true);
    }
    for (int i = 0; i < later_ranks; ++i) {
      backward(1, true);
      forward(1);
      backward(0, true);
    }
    // The last r + 1 pairs of backwards split from their middle on (chunk 1's first on odd ranks),
    // so that r + 1 W are left for the drain.
    bool split = false;
    for (int i = 0; i <= rank; ++i) {
      if (i == (rank + 1) / 2 && rank % 2 == 1) split = true;
      backward(1, !split);
      if (i == (rank + 1) / 2 && rank % 2 == 0) split = true;
      backward(0, !split);
    }
    for (int i = 0; i < later_ranks; ++i) {
      deferredWeight();
      backward(0, !split);
    }
    while (!deferred_weights.empty()) deferredWeight();
  }
  return schedule;
}

}  // namespace stagecut
