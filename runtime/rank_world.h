#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/rank_layout.h"
#include "runtime/stage_transport.h"

namespace stagecut {

/// Where the ranks of a run leave small values for one another: each rank's outcome, gathered by
/// rank 0. The real store is c10d's TCPStore hosted by rank 0 (GlooTransport); tests use an
/// in-process fake (InProcessStore).
class RankStore {
 public:
  virtual ~RankStore() = default;
  /// Publishes `value` under `key` for every rank of the run.
  virtual void publish(const std::string& key, const std::string& value) = 0;
  /// Waits until `key` is published and returns its value. Throws Error (kRuntime) naming the key
  /// when it is not published within the run's timeout or the store is lost.
  virtual std::string fetch(const std::string& key) = 0;
};

/// The time source of a rank's measurements: the link probes and the op records, in nanoseconds.
/// Ranks' op records are set against each other (the step spans every rank), so every rank of a
/// machine must read the same clock.
class RankClock {
 public:
  virtual ~RankClock() = default;
  /// Nanoseconds since the clock's own epoch; never goes back.
  virtual std::int64_t nowNs() const = 0;
};

/// The real clock: std::chrono::steady_clock (CLOCK_MONOTONIC on Linux), one clock for every
/// process and thread of a machine.
class SteadyClock : public RankClock {
 public:
  std::int64_t nowNs() const override;
};

/// Everything one rank of a validation talks to beyond its own computation: the pipeline of its
/// replica, the data-parallel group of its stage, the store that gathers the outcomes and the
/// clock of its measurements. The real world is GlooWorld (runtime/gloo_transport.h), the fake
/// InProcessWorld (runtime/in_process_transport.h), one thread per rank.
class RankWorld {
 public:
  virtual ~RankWorld() = default;
  /// Meets the other ranks. runValidationRank calls it once, after loading its model, before any
  /// call but layout() and clock(). Throws Error (kRuntime) naming the ranks that did not come or
  /// the address that could not be reached.
  virtual void connect() = 0;
  /// This rank's place in the run; known before connect().
  virtual RankLayout layout() const = 0;
  /// The pipeline of this rank's replica: its rank() is the stage, its worldSize() the stages.
  virtual StageTransport& transport() = 0;
  /// The data-parallel group of this rank's stage; nullptr without replicas.
  virtual ReplicaGroup* replicaGroup() = 0;
  /// Shared by every rank of the run (all replicas).
  virtual RankStore& store() = 0;
  virtual const RankClock& clock() const = 0;
  /// The pipeline's transport between the stages' GPUs without host copies (NCCL,
  /// runtime/nccl_transport.h), opened after connect(). The default, for worlds that have
  /// none (the in-process fake), throws Error (kInput).
  virtual std::unique_ptr<StageTransport> openDeviceTransport(const torch::Device& device);

  /// Waits until every rank of the run (all replicas) reaches this call: the pipeline's barrier,
  /// then the stage group's; once both are passed, every rank has passed the first. Errors as the
  /// transport's and the group's barriers.
  void barrier();
};

}  // namespace stagecut
