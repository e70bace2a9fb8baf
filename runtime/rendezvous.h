#pragma once

#include <chrono>
#include <string>

#include "runtime/rank_world.h"

namespace stagecut {

/// Where the ranks meet: torchrun's MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE, and how the
/// world is laid out: `replicas` data-parallel copies of a pipeline (layout()).
struct RendezvousInfo {
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  int rank = 0;
  int world_size = 1;
  int replicas = 1;
  std::chrono::milliseconds timeout{120000};

  /// Where this rank sits: its pipeline rank and replica.
  RankLayout layout() const { return {rank, world_size, replicas}; }
};

}  // namespace stagecut
