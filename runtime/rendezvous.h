#pragma once

#include <chrono>
#include <string>

#include "runtime/rank_world.h"

namespace stagecut {

/// Where the ranks meet: torchrun's MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE, and how the
/// world is laid out: `replicas` data-parallel copies of a pipeline of world_size / replicas
/// stages, global rank = replica x stages + stage.
struct RendezvousInfo {
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  int rank = 0;
  int world_size = 1;
  int replicas = 1;
  std::chrono::milliseconds timeout{120000};

  int stages() const { return world_size / replicas; }
  int stage() const { return rank % stages(); }
  int replica() const { return rank / stages(); }
  RankLayout layout() const { return {rank, world_size, replicas}; }
};

}  // namespace stagecut
