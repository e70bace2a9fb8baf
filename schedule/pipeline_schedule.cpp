#include "schedule/pipeline_schedule.h"

#include <algorithm>

#include "core/error.h"

namespace stagecut {

std::size_t Schedule::opCount() const {
  std::size_t count = 0;
  for (const RankOps& ops : ranks) count += ops.size();
  return count;
}

const char* opKindLetter(OpKind kind) {
  switch (kind) {
    case OpKind::kForward:
      return "F";
    case OpKind::kBackward:
      return "B";
    case OpKind::kWeight:
      return "W";
    case OpKind::kAllReduce:
      return "A";
  }
  return "?";
}

bool Schedule::hasAllReduce() const {
  for (const RankOps& ops : ranks) {
    for (const PipelineOp& op : ops) {
      if (op.kind == OpKind::kAllReduce) return true;
    }
  }
  return false;
}

std::string describeOp(const PipelineOp& op, const Placement& placement) {
  const bool chunks = placement.chunked();
  if (op.kind == OpKind::kAllReduce) {
    return chunks ? "A(c" + std::to_string(op.chunk) + ")" : std::string("A");
  }
  std::string text = std::string(opKindLetter(op.kind)) + "(" + std::to_string(op.microbatch);
  if (chunks) text += ", c" + std::to_string(op.chunk);
  return text + ")";
}

void checkScheduleComplete(const Schedule& schedule) {
  const std::string where = "schedule '" + schedule.name + "'";
  const Placement& placement = schedule.placement;
  const int chunks = placement.chunks_per_rank;
  if (placement.ranks < 1 || schedule.microbatches < 1 || chunks < 1) {
    throw Error(where + ": needs at least 1 rank, 1 microbatch and 1 chunk per rank; it has " +
                std::to_string(placement.ranks) + ", " + std::to_string(schedule.microbatches) +
                " and " + std::to_string(chunks));
  }
  if (static_cast<int>(schedule.ranks.size()) != placement.ranks) {
    throw Error(where + ": has " + std::to_string(schedule.ranks.size()) + " op lists for " +
                std::to_string(placement.ranks) + " ranks; give one list per rank");
  }
  const int kinds = schedule.splits_backward ? 3 : 2;
  const std::size_t per_rank =
      static_cast<std::size_t>(kinds) * chunks * schedule.microbatches;
  std::vector<char> seen(per_rank);
  std::vector<char> reduced(static_cast<std::size_t>(chunks));
  for (int rank = 0; rank < placement.ranks; ++rank) {
    const std::string at = where + ": rank " + std::to_string(rank);
    std::fill(seen.begin(), seen.end(), 0);
    std::fill(reduced.begin(), reduced.end(), 0);
    std::size_t all_reduces = 0;
    for (const PipelineOp& op : schedule.ranks[rank]) {
      // Named only when refused: a check that runs before every simulation must not format
      // every op of a long schedule.
      const auto name = [&] { return describeOp(op, placement); };
      if (op.kind == OpKind::kAllReduce) {
        if (op.microbatch != 0 || op.chunk < 0 || op.chunk >= chunks) {
          throw Error(at + ": all-reduce op of chunk " + std::to_string(op.chunk) + ", microbatch " +
                      std::to_string(op.microbatch) + " is out of range; an all-reduce has " +
                      "microbatch 0 and a chunk in 0.." + std::to_string(chunks - 1));
        }
        if (reduced[op.chunk]) {
          throw Error(at + ": op " + name() + " appears twice; each chunk's gradients are " +
                      "all-reduced once per step");
        }
        reduced[op.chunk] = 1;
        ++all_reduces;
        continue;
      }
      if (op.microbatch < 0 || op.microbatch >= schedule.microbatches || op.chunk < 0 ||
          op.chunk >= chunks) {
        throw Error(at + ": op " + name() + " is out of range; microbatches are 0.." +
                    std::to_string(schedule.microbatches - 1) + " and chunks 0.." +
                    std::to_string(chunks - 1));
      }
      if (op.kind == OpKind::kWeight && !schedule.splits_backward) {
        throw Error(at + ": op " + name() +
                    " is a weight-gradient op in a schedule whose backward is not split; set "
                    "splits_backward or drop the W ops");
      }
      const std::size_t slot =
          (static_cast<std::size_t>(op.kind) * chunks + op.chunk) * schedule.microbatches +
          op.microbatch;
      if (seen[slot]) throw Error(at + ": op " + name() + " appears twice; each op runs once");
      seen[slot] = 1;
    }
    if (schedule.ranks[rank].size() - all_reduces != per_rank) {
      for (std::size_t slot = 0; slot < per_rank; ++slot) {
        if (seen[slot]) continue;
        const int microbatch = static_cast<int>(slot % schedule.microbatches);
        const int chunk = static_cast<int>(slot / schedule.microbatches % chunks);
        const auto kind = static_cast<OpKind>(slot / schedule.microbatches / chunks);
        throw Error(at + ": op " + describeOp({kind, microbatch, chunk}, placement) +
                    " is missing; every microbatch needs its F and B" +
                    (schedule.splits_backward ? " and W" : "") + " on every chunk");
      }
    }
  }
}

OpKind activationReleaseOp(const Schedule& schedule) {
  return schedule.splits_backward ? OpKind::kWeight : OpKind::kBackward;
}

std::vector<int> peakInFlight(const Schedule& schedule) {
  const OpKind release = activationReleaseOp(schedule);
  std::vector<int> peaks;
  for (const RankOps& ops : schedule.ranks) {
    int live = 0, peak = 0;
    for (const PipelineOp& op : ops) {
      if (op.kind == OpKind::kForward) peak = std::max(peak, ++live);
      if (op.kind == release) --live;
    }
    peaks.push_back(peak);
  }
  return peaks;
}

}  // namespace stagecut
