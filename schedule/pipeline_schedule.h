#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/placement.h"

namespace stagecut {

/// What one op of a pipeline schedule computes for one microbatch on one model chunk.
enum class OpKind : std::uint8_t {
  kForward,   ///< F: the chunk's forward pass
  kBackward,  ///< B: the whole backward, or only the input gradient where W is split off
  kWeight,    ///< W: the weight gradient, split off the backward (zero-bubble schedules)
  /// A: the data-parallel gradient all-reduce of one chunk (microbatch 0), after all of that
  /// chunk's B (or W) ops on the rank; see schedule/data_parallel.h.
  kAllReduce,
};

/// One op of a rank's list: F, B or W of `microbatch` (0..M-1) on the rank's local `chunk`
/// (0..v-1), or the all-reduce A of `chunk` (microbatch 0). Plain data: the simulator and the
/// pipelined runtime execute the same lists.
struct PipelineOp {
  OpKind kind = OpKind::kForward;
  int microbatch = 0;
  int chunk = 0;

  bool operator==(const PipelineOp& other) const {
    return kind == other.kind && microbatch == other.microbatch && chunk == other.chunk;
  }
};

/// The ops one rank runs, in order, one at a time.
using RankOps = std::vector<PipelineOp>;

/// A pipeline schedule: for each of its placement's N ranks, the ordered ops of one training
/// step over `microbatches` microbatches. Rank r's local chunk c (an op's `chunk`) is chunk
/// placement.chunkAt(r, c) of the chain (in loop order c * N + r, Megatron's virtual pipeline
/// layout; c = 0 with one chunk per rank).
struct Schedule {
  std::string name;
  Placement placement;   ///< N ranks, v chunks per rank and how the chunks sit on them
  int microbatches = 0;  ///< M
  bool splits_backward = false;  ///< true when B is the input gradient only and W ops exist
  std::vector<RankOps> ranks;    ///< one op list per rank, placement.ranks of them

  /// Total ops over all ranks.
  std::size_t opCount() const;
  /// True when some rank's list holds an all-reduce op.
  bool hasAllReduce() const;
};

/// "F", "B", "W" or "A".
const char* opKindLetter(OpKind kind);

/// "F(3)" for one chunk per rank, "F(3, c1)" with several, "A" or "A(c1)" for an all-reduce:
/// how messages and charts name an op of a rank under `placement`.
std::string describeOp(const PipelineOp& op, const Placement& placement);

/// The op that frees a microbatch's activations on its rank: W where the schedule splits the
/// backward (B then keeps what W needs), B otherwise.
OpKind activationReleaseOp(const Schedule& schedule);

/// Per rank, the most (microbatch, chunk) activation sets alive at once as the rank runs its
/// list in order: an F keeps one, the activationReleaseOp() frees it. It depends on the order
/// alone, not on op times, so the partitioner's memory term and the simulator agree exactly:
/// GPipe M, 1F1B min(N - r, M), and whatever interleaved 1F1B and ZB-H1's lists imply.
std::vector<int> peakInFlight(const Schedule& schedule);

/// Checks that a schedule can be simulated or run: N, M, v >= 1, one list per rank, every op's
/// microbatch and chunk in range, and each rank's list holding every F and B (and W, exactly
/// when `splits_backward`) of its chunks exactly once, and at most one all-reduce A per chunk
/// (microbatch 0). Throws Error (input) naming the schedule, the rank and the op otherwise.
/// Order is not checked here: the simulator reports deadlocks.
void checkScheduleComplete(const Schedule& schedule);

}  // namespace stagecut
