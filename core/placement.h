#pragma once

namespace stagecut {

/// How a pipeline's model chunks (contiguous pieces of the layer chain, in chain order) sit on its
/// ranks: the one vocabulary of the partitioner, the schedules, the memory timeline and the
/// outputs. The N-stage pipeline is v = 1 with chunk s on rank s.
struct Placement {
  enum class Style {
    kLoop,  ///< chunk c on rank c mod N (Megatron's virtual pipeline, interleaved 1F1B)
    kV,     ///< v = 2, rank r holds chunks r and 2N-1-r (ZB-V, DualPipeV)
  };

  int ranks = 1;            ///< N
  int chunks_per_rank = 1;  ///< v
  Style style = Style::kLoop;

  /// N ranks holding v chunks each in loop order (v = 1: the N-stage pipeline).
  static Placement loop(int ranks, int chunks_per_rank) { return Placement{ranks, chunks_per_rank, Style::kLoop}; }

  /// N x v.
  int chunkCount() const { return ranks * chunks_per_rank; }
  /// Whether some rank holds more than one chunk.
  bool chunked() const { return chunks_per_rank > 1; }
  /// The rank that runs chunk `chunk` (0..N x v - 1).
  int rankOf(int chunk) const {
    if (style == Style::kV) return chunk < ranks ? chunk : 2 * ranks - 1 - chunk;
    return chunk % ranks;
  }
  /// Which of its rank's chunks `chunk` is (0..v-1), in the order the rank's list names them.
  int localOf(int chunk) const { return chunk / ranks; }
  /// The chunk that rank `rank` holds as its local chunk `local` (0..v-1).
  int chunkAt(int rank, int local) const {
    if (style == Style::kV) return local == 0 ? rank : 2 * ranks - 1 - rank;
    return local * ranks + rank;
  }
  /// Rank `rank`'s local chunk holding the chain's first layer (chunk 0), or -1 when another
  /// rank's does: that chunk receives no input.
  int firstLocalOn(int rank) const { return rankOf(0) == rank ? localOf(0) : -1; }
  /// Rank `rank`'s local chunk holding the chain's last layer, or -1: that chunk sends no output
  /// (rank N - 1 in loop order, rank 0 in a V).
  int lastLocalOn(int rank) const { return rankOf(chunkCount() - 1) == rank ? localOf(chunkCount() - 1) : -1; }
  /// Whether chunks `chunk` and `chunk` + 1 run on different ranks (their boundary is a message).
  bool crossesRanks(int chunk) const { return rankOf(chunk) != rankOf(chunk + 1); }

  bool operator==(const Placement& other) const {
    return ranks == other.ranks && chunks_per_rank == other.chunks_per_rank && style == other.style;
  }
  bool operator!=(const Placement& other) const { return !(*this == other); }
};

/// "loop" or "v": the name partition files give a style.
const char* placementStyleName(Placement::Style style);

/// "in loop order" or "in a V": how messages name a style.
const char* placementStyleWords(Placement::Style style);

}  // namespace stagecut
