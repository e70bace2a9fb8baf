#include "runtime/nccl_transport.h"

#include <cstdlib>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include "core/error.h"
#include "profiler/torch_compat.h"
#include "runtime/direction_split_transport.h"

#if STAGECUT_HAVE_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace stagecut {

bool ncclAvailable() { return STAGECUT_HAVE_NCCL != 0; }

#if STAGECUT_HAVE_NCCL

namespace {

// ProcessGroupNCCL wants shutdown() before it is destroyed (it warns otherwise); the
// transport's groups live exactly as long as their channels.
class NcclGroup {
 public:
  NcclGroup(const c10::intrusive_ptr<c10d::Store>& store, const std::string& prefix, const RendezvousInfo& info) {
    // Without blocking waits NCCL's wait() only orders the rank's stream after the message and
    // ignores its timeout: a lost peer would hang the rank instead of ending it with its name.
    ::setenv("TORCH_NCCL_BLOCKING_WAIT", "1", 0);
    auto options = c10d::ProcessGroupNCCL::Options::create();
    options->timeout = info.timeout;
    group_ = c10::make_intrusive<c10d::ProcessGroupNCCL>(c10::make_intrusive<c10d::PrefixStore>(prefix, store),
                                                         info.layout().pipelineRank(), info.layout().pipelineRanks(), options);
  }
  ~NcclGroup() {
    try {
      group_->shutdown();
    } catch (const std::exception&) {
      // A failed run's groups: its error is the one the user sees.
    }
  }
  NcclGroup(const NcclGroup&) = delete;
  NcclGroup& operator=(const NcclGroup&) = delete;
  const c10::intrusive_ptr<c10d::ProcessGroupNCCL>& group() const { return group_; }

 private:
  c10::intrusive_ptr<c10d::ProcessGroupNCCL> group_;
};

// The groups come first among the bases: built before the channels over them, destroyed after.
// NCCL makes a group's communicator at its first message, so a kind that never travels one way
// costs nothing.
struct NcclGroups {
  NcclGroups(const c10::intrusive_ptr<c10d::Store>& store, const RendezvousInfo& info)
      : activations_down(store, "pipeline-activations-down/" + std::to_string(info.layout().replica()), info),
        activations_up(store, "pipeline-activations-up/" + std::to_string(info.layout().replica()), info),
        gradients_down(store, "pipeline-gradients-down/" + std::to_string(info.layout().replica()), info),
        gradients_up(store, "pipeline-gradients-up/" + std::to_string(info.layout().replica()), info) {}
  NcclGroup activations_down;
  NcclGroup activations_up;
  NcclGroup gradients_down;
  NcclGroup gradients_up;
};

OrderedChannels channelsOver(const NcclGroups& groups, const RendezvousInfo& info, const torch::Device& device) {
  const auto over = [&](const NcclGroup& group) {
    return std::make_unique<C10dPointToPoint>(group.group(), info, device, false);
  };
  return {over(groups.activations_down), over(groups.activations_up), over(groups.gradients_down),
          over(groups.gradients_up)};
}

class NcclTransport : private NcclGroups, public DirectionSplitTransport {
 public:
  NcclTransport(const c10::intrusive_ptr<c10d::Store>& store, const RendezvousInfo& info, const torch::Device& device,
                StageTransport& control)
      : NcclGroups(store, info), DirectionSplitTransport(channelsOver(*this, info, device), control) {}
};

}  // namespace

std::unique_ptr<StageTransport> openNcclTransport(const c10::intrusive_ptr<c10d::Store>& store, const RendezvousInfo& info,
                                                  const torch::Device& device, StageTransport& control) {
  try {
    return std::make_unique<NcclTransport>(store, info, device, control);
  } catch (const std::exception& e) {
    throw Error("rank " + std::to_string(info.rank) + ": could not start NCCL on " + device.str() + " (" +
                    c10dMessage(e) + "); run with --backend gloo",
                ErrorKind::kRuntime);
  }
}

#else

std::unique_ptr<StageTransport> openNcclTransport(const c10::intrusive_ptr<c10d::Store>&, const RendezvousInfo& info,
                                                  const torch::Device&, StageTransport&) {
  throw Error("rank " + std::to_string(info.rank) +
                  ": this stagecut's LibTorch has no NCCL (a CPU build); build against a CUDA LibTorch "
                  "(make build TORCH=pip) or run with --backend gloo",
              ErrorKind::kInput);
}

#endif

}  // namespace stagecut
