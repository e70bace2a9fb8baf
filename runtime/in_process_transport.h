#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "runtime/rank_world.h"
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
  torch::Tensor recv(const TensorSpec& spec, int peer, int tag, const std::string& what) override;
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

/// The fake RankStore of an in-process run: a map that fetch() waits on.
class InProcessStore : public RankStore {
 public:
  explicit InProcessStore(std::chrono::milliseconds timeout) : timeout_(timeout) {}
  void publish(const std::string& key, const std::string& value) override;
  /// Throws Error (kRuntime) naming the key when it is not published within the timeout.
  std::string fetch(const std::string& key) override;

 private:
  std::chrono::milliseconds timeout_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::string> values_;
};

/// What the ranks of an in-process run share (one thread per rank, in tests): `replicas`
/// pipelines of `stages` ranks, each with its own InProcessHub; for each stage, the InProcessReplicaHub
/// of its replicas; one store. Every wait is bounded by `timeout`.
class InProcessCluster {
 public:
  InProcessCluster(int stages, int replicas, std::chrono::milliseconds timeout);
  int stages() const { return stages_; }
  int replicas() const { return replicas_; }
  const std::shared_ptr<InProcessHub>& pipeline(int replica) const { return pipelines_.at(replica); }
  const std::shared_ptr<InProcessReplicaHub>& stageGroup(int stage) const { return stage_groups_.at(stage); }
  InProcessStore& store() { return store_; }

 private:
  int stages_;
  int replicas_;
  std::vector<std::shared_ptr<InProcessHub>> pipelines_;
  std::vector<std::shared_ptr<InProcessReplicaHub>> stage_groups_;
  InProcessStore store_;
};

/// One rank's view of an InProcessCluster (global rank = replica x stages + stage): the fake
/// RankWorld. connect() has nothing to do; the clock is the steady clock, which the threads share
/// as the processes of a machine do. Without replicas, replicaGroup() is nullptr.
class InProcessWorld : public RankWorld {
 public:
  InProcessWorld(std::shared_ptr<InProcessCluster> cluster, int rank);
  void connect() override {}
  RankLayout layout() const override { return layout_; }
  StageTransport& transport() override { return transport_; }
  ReplicaGroup* replicaGroup() override { return group_ ? &*group_ : nullptr; }
  RankStore& store() override { return cluster_->store(); }
  const RankClock& clock() const override { return clock_; }

 private:
  std::shared_ptr<InProcessCluster> cluster_;
  RankLayout layout_;
  InProcessTransport transport_;
  std::optional<InProcessReplicaGroup> group_;
  SteadyClock clock_;
};

}  // namespace stagecut
