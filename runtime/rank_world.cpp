#include "runtime/rank_world.h"

#include <chrono>

#include "core/error.h"

namespace stagecut {

std::int64_t SteadyClock::nowNs() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void RankWorld::barrier() {
  transport().barrier();
  if (ReplicaGroup* replicas = replicaGroup()) replicas->barrier("the step's barrier");
}

std::unique_ptr<StageTransport> RankWorld::openDeviceTransport(const torch::Device& device) {
  throw Error("rank " + std::to_string(layout().rank) + ": this run's ranks have no transport between GPUs for " +
                  device.str() + "; run with --backend gloo",
              ErrorKind::kInput);
}

}  // namespace stagecut
