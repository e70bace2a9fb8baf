#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "runtime/stage_transport.h"

namespace c10d {
class Store;
}

namespace stagecut {

/// Where the ranks meet: torchrun's MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE.
struct RendezvousInfo {
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  int rank = 0;
  int world_size = 1;
  std::chrono::milliseconds timeout{120000};
};

/// StageTransport over c10d: a TCPStore for the meeting (rank 0 hosts it) and
/// ProcessGroupGloo point-to-point send/recv for tensors. Every wait is bounded by the timeout
/// and a timeout or a lost peer becomes an Error (kRuntime) naming the op and the peer rank.
class GlooTransport : public StageTransport {
 public:
  /// Connects to the other ranks. Throws Error (kRuntime) when they do not all arrive in time.
  explicit GlooTransport(const RendezvousInfo& info);
  ~GlooTransport() override;

  void sendAsync(const torch::Tensor& tensor, int peer, int tag) override;
  torch::Tensor recv(const std::vector<std::int64_t>& shape, int peer, int tag, const std::string& what) override;
  void flushSends() override;
  void barrier() override;
  int rank() const override;
  int worldSize() const override;

  /// Publishes `value` under `key` for the other ranks (results gathered by rank 0).
  void publish(const std::string& key, const std::string& value);
  /// Waits for `key` to be published and returns it.
  std::string fetch(const std::string& key);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace stagecut
