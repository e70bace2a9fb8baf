#include "runtime/rank_world.h"

#include <chrono>

namespace stagecut {

std::int64_t SteadyClock::nowNs() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void RankWorld::barrier() {
  transport().barrier();
  if (ReplicaGroup* replicas = replicaGroup()) replicas->barrier("the step's barrier");
}

}  // namespace stagecut
