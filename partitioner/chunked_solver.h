#pragma once

#include <cstdint>
#include <vector>

#include "core/placement.h"
#include "partitioner/cost_model.h"
#include "prediction/stage_memory.h"

namespace stagecut {

/// A rank's memory over the step as the memory timeline counts it, for any chunks it may hold:
/// its op list's states per local chunk (rankChunkMemoryStates) and the terms of a layer range.
struct ChunkedMemory {
  const StageMemoryTable* table = nullptr;  ///< nullptr: no memory caps
  /// Per rank, its states per local chunk (rankChunkMemoryStates, or its rankPeakCandidates).
  std::vector<std::vector<std::vector<MemoryState>>> rank_states;
  std::vector<double> rank_cap_bytes;  ///< per rank
};

/// What the chunked search is given: the chain's N x v chunks as the cost model's stages (chunk
/// c priced at the speed of its rank, the framework's cuts), where they sit, and the memory caps.
struct ChunkedProblem {
  const CostModel* chunks = nullptr;
  Placement placement;
  ChunkedMemory memory;
  /// The search stops after this many nodes and returns the best split found with its gap.
  std::int64_t node_budget = 2'000'000;
};

/// The best chunking found: layers per chunk in chain order, the slowest rank's load (the sum of
/// its chunks' costs) and the largest chunk's cost, a proven lower bound of the slowest rank over
/// every chunking, whether its slowest rank is proven optimal (the search ended, or the split
/// meets the bound) and whether the search ended (then its largest chunk is the least too).
struct ChunkedSplit {
  std::vector<int> layers_per_chunk;
  double bottleneck_ms = 0.0;
  double largest_chunk_ms = 0.0;
  double lower_bound_ms = 0.0;
  bool exact = false;
  bool search_complete = false;
  std::int64_t nodes = 0;
};

/// The messages of chunk `chunk` holding layers first..last, ms per microbatch: those at its ends,
/// but none at an end whose neighbouring chunk runs on the same rank (a V's turn, or every
/// boundary of a one-rank pipeline).
double chunkCommMs(const CostModel& model, const Placement& placement, int chunk, int first, int last);

/// What chunk `chunk` holding layers first..last costs its rank per microbatch: its compute and
/// chunkCommMs over its rank's speed. The chunked search and its summary price chunks with it alone.
double chunkCostMs(const CostModel& model, const Placement& placement, int chunk, int first, int last);

/// The chunking into N x v contiguous non-empty chunks that minimizes the slowest rank, then the
/// largest chunk (the fill and drain of an interleaved pipeline are made of chunks), under the cost
/// model's cuts and each rank's memory cap. Branch and bound over chunk ends in chain order, with
/// the work left over the ranks' speeds as its bound, and states already beaten by one with no
/// more load on any rank pruned (without caps). Throws Error (input) when no chunking fits the
/// caps or the rules, or the chain has fewer layers than chunks.
ChunkedSplit solveChunkedSplit(const ChunkedProblem& problem);

/// The peak bytes of rank `rank` whose local chunk c has `terms[c]` (all zero for a chunk not
/// placed yet, which holds nothing).
double chunkedRankPeakBytes(const ChunkedMemory& memory, int rank, const std::vector<StageMemoryTerms>& terms);

}  // namespace stagecut
