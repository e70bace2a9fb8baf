#pragma once
// Faults for the tests, kept out of the runtime: a StageTransport decorator that strikes at the
// start of a given step, and a RankWorld decorator that puts it between a rank and its pipeline.

#include <signal.h>

#include <chrono>
#include <optional>
#include <thread>

#include "core/error.h"
#include "runtime/rank_world.h"

namespace stagecut::testing {

/// What a FaultTransport does to its rank, and when.
struct Fault {
  enum class Kind {
    kNone,
    kThrow,  ///< throws Error (kRuntime) "injected fault": a crash, for ranks that are threads
    kStall,  ///< sleeps for `stall` while its peers are in their step
    kKill,   ///< SIGKILL to its own process: a crash, for ranks that are processes
    kStop,   ///< SIGSTOP to its own process: stopped, not dead; its sockets stay open
  };
  Kind kind = Kind::kNone;
  /// 0-based step (warm-up steps included) at whose start the fault strikes. A rank's step opens
  /// with the world's barrier, so the transport counts barriers: step s begins after barrier s + 1.
  int step = 0;
  std::chrono::milliseconds stall{std::chrono::hours(1)};
};

/// A StageTransport that forwards to `inner` and strikes with `fault` once its peers have all
/// entered the fault's step (right after that step's barrier), so they are waiting on this rank.
class FaultTransport : public StageTransport {
 public:
  FaultTransport(StageTransport& inner, Fault fault) : inner_(inner), fault_(fault) {}

  void sendAsync(const torch::Tensor& tensor, int peer, int tag) override { inner_.sendAsync(tensor, peer, tag); }
  void postRecv(const stagecut::TensorSpec& spec, int peer, int tag) override { inner_.postRecv(spec, peer, tag); }
  torch::Tensor recv(const stagecut::TensorSpec& spec, int peer, int tag, const std::string& what) override {
    return inner_.recv(spec, peer, tag, what);
  }
  void flushSends() override { inner_.flushSends(); }
  void releaseSend(int peer, int tag) override { inner_.releaseSend(peer, tag); }
  void barrier() override {
    inner_.barrier();
    if (++barriers_ == fault_.step + 1) strike();
  }
  int rank() const override { return inner_.rank(); }
  int worldSize() const override { return inner_.worldSize(); }

 private:
  void strike() const {
    switch (fault_.kind) {
      case Fault::Kind::kNone:
        return;
      case Fault::Kind::kThrow:
        throw Error("rank " + std::to_string(rank()) + ": injected fault at step " + std::to_string(fault_.step),
                    ErrorKind::kRuntime);
      case Fault::Kind::kStall:
        std::this_thread::sleep_for(fault_.stall);
        return;
      case Fault::Kind::kKill:
        ::raise(SIGKILL);
        return;
      case Fault::Kind::kStop:
        ::raise(SIGSTOP);
        return;
    }
  }

  StageTransport& inner_;
  Fault fault_;
  int barriers_ = 0;
};

/// A RankWorld that is `inner` with a FaultTransport in front of its pipeline.
class FaultWorld : public RankWorld {
 public:
  FaultWorld(RankWorld& inner, Fault fault) : inner_(inner), fault_(fault) {}

  void connect() override {
    inner_.connect();
    transport_.emplace(inner_.transport(), fault_);
  }
  RankLayout layout() const override { return inner_.layout(); }
  StageTransport& transport() override { return transport_ ? *transport_ : inner_.transport(); }
  ReplicaGroup* replicaGroup() override { return inner_.replicaGroup(); }
  RankStore& store() override { return inner_.store(); }
  const RankClock& clock() const override { return inner_.clock(); }

 private:
  RankWorld& inner_;
  Fault fault_;
  std::optional<FaultTransport> transport_;
};

}  // namespace stagecut::testing
