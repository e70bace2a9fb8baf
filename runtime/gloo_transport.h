#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <utility>

#include "runtime/rank_world.h"
#include "runtime/rendezvous.h"
#include "runtime/stage_transport.h"

namespace stagecut {

/// torchrun's meeting from the environment: RANK and WORLD_SIZE (both must be set; see
/// launchRanks), MASTER_ADDR and MASTER_PORT where set (else RendezvousInfo's defaults), with the
/// layout's `replicas` and the `timeout` of every wait, which torchrun does not carry. Throws
/// Error (input) naming the variable for one that is unset, not in digits or out of range
/// (RANK 0..WORLD_SIZE-1, MASTER_PORT 1..65535), before anything connects.
RendezvousInfo rendezvousFromEnvironment(int replicas, std::chrono::milliseconds timeout);

/// StageTransport over c10d: one TCPStore for the meeting (rank 0 hosts it), a ProcessGroupGloo
/// per pipeline (the ranks of one replica, over a PrefixStore) for point-to-point send/recv, and,
/// with replicas, a ProcessGroupGloo per stage (the ranks holding that stage) for the gradient
/// all-reduce. As a StageTransport, rank() is the stage and worldSize() the number of stages; as
/// a RankStore, it reads and writes the TCPStore.
/// Every wait is bounded by the timeout, and a timeout or a lost peer becomes an Error (kRuntime)
/// naming the op and the peer's global rank.
class GlooTransport : public StageTransport, public RankStore {
 public:
  /// Connects to the other ranks. Throws Error (kRuntime) naming the ranks that did not arrive in
  /// time, or the address when the store cannot be reached.
  explicit GlooTransport(const RendezvousInfo& info);
  ~GlooTransport() override;

  void sendAsync(const torch::Tensor& tensor, int peer, int tag) override;
  void postRecv(const TensorSpec& spec, int peer, int tag) override;
  torch::Tensor recv(const TensorSpec& spec, int peer, int tag, const std::string& what) override;
  void flushSends() override;
  void releaseSend(int peer, int tag) override;
  void barrier() override;
  int rank() const override;
  int worldSize() const override;

  /// The data-parallel group of this rank's stage; nullptr without replicas.
  ReplicaGroup* replicaGroup();
  /// NCCL groups for the pipeline over this transport's store, barriers through this one
  /// (openNcclTransport, runtime/nccl_transport.h).
  std::unique_ptr<StageTransport> openNcclTransport(const torch::Device& device);
  void publish(const std::string& key, const std::string& value) override;
  std::string fetch(const std::string& key) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The real RankWorld: connect() builds the GlooTransport (the meeting on the TCPStore, then the
/// process groups), which is also the store; the clock is the steady clock. The transport, group
/// and store exist from connect() on (before it, asking for them throws Error, kRuntime).
class GlooWorld : public RankWorld {
 public:
  explicit GlooWorld(RendezvousInfo info) : info_(std::move(info)) {}
  void connect() override;
  RankLayout layout() const override { return info_.layout(); }
  StageTransport& transport() override { return connected(); }
  ReplicaGroup* replicaGroup() override { return connected().replicaGroup(); }
  RankStore& store() override { return connected(); }
  const RankClock& clock() const override { return clock_; }
  std::unique_ptr<StageTransport> openDeviceTransport(const torch::Device& device) override {
    return connected().openNcclTransport(device);
  }

 private:
  GlooTransport& connected();

  RendezvousInfo info_;
  SteadyClock clock_;
  std::unique_ptr<GlooTransport> transport_;
};

}  // namespace stagecut
