#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "runtime/stage_transport.h"

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
};

/// StageTransport over c10d: one TCPStore for the meeting (rank 0 hosts it), a ProcessGroupGloo
/// per pipeline (the ranks of one replica, over a PrefixStore) for point-to-point send/recv, and,
/// with replicas, a ProcessGroupGloo per stage (the ranks holding that stage) for the gradient
/// all-reduce. As a StageTransport, rank() is the stage and worldSize() the number of stages.
/// Every wait is bounded by the timeout, and a timeout or a lost peer becomes an Error (kRuntime)
/// naming the op and the peer's global rank.
class GlooTransport : public StageTransport {
 public:
  /// Connects to the other ranks. Throws Error (kRuntime) naming the ranks that did not arrive in
  /// time, or the address when the store cannot be reached.
  explicit GlooTransport(const RendezvousInfo& info);
  ~GlooTransport() override;

  void sendAsync(const torch::Tensor& tensor, int peer, int tag) override;
  torch::Tensor recv(const std::vector<std::int64_t>& shape, int peer, int tag, const std::string& what) override;
  void flushSends() override;
  void releaseSend(int peer, int tag) override;
  void barrier() override;
  int rank() const override;
  int worldSize() const override;

  /// The data-parallel group of this rank's stage; nullptr without replicas.
  ReplicaGroup* replicaGroup();
  /// Waits until every rank of the world (all replicas) reaches this call.
  void worldBarrier();
  /// Publishes `value` under `key` for the other ranks (results gathered by rank 0).
  void publish(const std::string& key, const std::string& value);
  /// Waits for `key` to be published and returns it.
  std::string fetch(const std::string& key);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace stagecut
