#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "runtime/stage_transport.h"

namespace stagecut {

/// Mailboxes shared by the ranks of an in-process pipeline (one thread per rank, in tests).
class InProcessHub {
 public:
  explicit InProcessHub(int world_size, std::chrono::milliseconds timeout)
      : world_size_(world_size), timeout_(timeout) {}

  void post(int from, int to, int tag, torch::Tensor tensor);
  torch::Tensor take(int from, int to, int tag, const std::string& what);
  void barrier();
  int worldSize() const { return world_size_; }

 private:
  int world_size_;
  std::chrono::milliseconds timeout_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::tuple<int, int, int>, torch::Tensor> mail_;
  int arrived_ = 0;
  int generation_ = 0;
};

/// One rank's view of an InProcessHub: the fake StageTransport that makes schedule execution
/// testable without sockets or processes.
class InProcessTransport : public StageTransport {
 public:
  InProcessTransport(std::shared_ptr<InProcessHub> hub, int rank) : hub_(std::move(hub)), rank_(rank) {}
  void sendAsync(const torch::Tensor& tensor, int peer, int tag) override;
  torch::Tensor recv(const std::vector<std::int64_t>& shape, int peer, int tag, const std::string& what) override;
  void flushSends() override {}
  void releaseSend(int, int) override {}
  void barrier() override { hub_->barrier(); }
  int rank() const override { return rank_; }
  int worldSize() const override { return hub_->worldSize(); }

 private:
  std::shared_ptr<InProcessHub> hub_;
  int rank_;
};

/// The replicas of one stage in an in-process run (one thread per replica, in tests): sums a
/// tensor over them, as the data-parallel all-reduce does.
class InProcessReplicaHub {
 public:
  InProcessReplicaHub(int replicas, std::chrono::milliseconds timeout) : replicas_(replicas), timeout_(timeout) {}
  /// Adds `tensor` and returns the sum once every replica has added its own. Throws Error
  /// (kRuntime) naming `what` when they do not all arrive in time.
  torch::Tensor allReduce(const torch::Tensor& tensor, const std::string& what);
  int replicas() const { return replicas_; }

 private:
  int replicas_;
  std::chrono::milliseconds timeout_;
  std::mutex mutex_;
  std::condition_variable changed_;
  torch::Tensor sum_;
  torch::Tensor result_;
  int arrived_ = 0;
  int generation_ = 0;
};

/// One replica's view of an InProcessReplicaHub: the fake ReplicaGroup.
class InProcessReplicaGroup : public ReplicaGroup {
 public:
  InProcessReplicaGroup(std::shared_ptr<InProcessReplicaHub> hub, int replica)
      : hub_(std::move(hub)), replica_(replica) {}
  void allReduceSum(torch::Tensor& tensor, const std::string& what) override {
    tensor.copy_(hub_->allReduce(tensor, what));
  }
  void barrier(const std::string& what) override { hub_->allReduce(torch::zeros({1}), what); }
  int size() const override { return hub_->replicas(); }
  int rank() const override { return replica_; }

 private:
  std::shared_ptr<InProcessReplicaHub> hub_;
  int replica_;
};

}  // namespace stagecut
