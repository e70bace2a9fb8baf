#pragma once

namespace stagecut {

/// Where a process sits among the ranks of a run: `replicas` data-parallel copies of a pipeline
/// of world_size / replicas ranks, global rank = replica x pipeline ranks + pipeline rank. The one
/// place ranks are numbered: the launcher, the transports, the runtime and the validation
/// document all go through it.
struct RankLayout {
  int rank = 0;        ///< global rank, 0..world_size - 1
  int world_size = 1;  ///< every rank of every replica
  int replicas = 1;    ///< D

  /// The ranks of one pipeline, N.
  int pipelineRanks() const { return world_size / replicas; }
  /// This rank's place in its pipeline, 0..N - 1.
  int pipelineRank() const { return rank % pipelineRanks(); }
  /// Which replica of the pipeline this rank belongs to, 0..D - 1.
  int replica() const { return rank / pipelineRanks(); }
  /// The global rank of pipeline rank `pipeline_rank` in replica `replica`, N = `pipeline_ranks`.
  static int globalRank(int replica, int pipeline_rank, int pipeline_ranks) {
    return replica * pipeline_ranks + pipeline_rank;
  }
};

}  // namespace stagecut
