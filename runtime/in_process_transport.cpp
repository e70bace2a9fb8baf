#include "runtime/in_process_transport.h"

#include "core/error.h"

namespace stagecut {

void InProcessHub::post(int from, int to, int tag, torch::Tensor tensor) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    mail_[{from, to, tag}] = std::move(tensor);
  }
  changed_.notify_all();
}

torch::Tensor InProcessHub::take(int from, int to, int tag, const std::string& what) {
  std::unique_lock<std::mutex> lock(mutex_);
  const auto key = std::make_tuple(from, to, tag);
  if (!changed_.wait_for(lock, timeout_, [&] { return mail_.count(key) > 0; })) {
    throw Error("rank " + std::to_string(to) + ": timed out waiting for " + what + " from rank " +
                    std::to_string(from),
                ErrorKind::kRuntime);
  }
  torch::Tensor tensor = mail_[key];
  mail_.erase(key);
  return tensor;
}

void InProcessHub::barrier() {
  std::unique_lock<std::mutex> lock(mutex_);
  const int generation = generation_;
  if (++arrived_ == world_size_) {
    arrived_ = 0;
    ++generation_;
    changed_.notify_all();
    return;
  }
  if (!changed_.wait_for(lock, timeout_, [&] { return generation_ != generation; })) {
    throw Error("timed out in a barrier waiting for the other ranks", ErrorKind::kRuntime);
  }
}

torch::Tensor InProcessReplicaHub::allReduce(const torch::Tensor& tensor, const std::string& what) {
  std::unique_lock<std::mutex> lock(mutex_);
  sum_ = arrived_ == 0 ? tensor.detach().clone() : sum_ + tensor.detach();
  if (++arrived_ == replicas_) {
    result_ = sum_;
    arrived_ = 0;
    ++generation_;
    changed_.notify_all();
    return result_.clone();
  }
  const int generation = generation_;
  if (!changed_.wait_for(lock, timeout_, [&] { return generation_ != generation; })) {
    throw Error("timed out in " + what + " waiting for the other replicas", ErrorKind::kRuntime);
  }
  return result_.clone();
}

void InProcessTransport::sendAsync(const torch::Tensor& tensor, int peer, int tag) {
  // Clone: a real transport copies the bytes, so the receiver must not share the sender's storage.
  hub_->post(rank_, peer, tag, tensor.detach().clone());
}

torch::Tensor InProcessTransport::recv(const TensorSpec& spec, int peer, int tag, const std::string& what) {
  torch::Tensor tensor = hub_->take(peer, rank_, tag, what);
  // What a real transport's receive buffer would not hold: a wrong shape or element type.
  if (tensor.sizes().vec() != spec.sizes || tensor.scalar_type() != spec.dtype) {
    throw Error("rank " + std::to_string(rank_) + ": " + what + " from rank " + std::to_string(peer) + " is " +
                    c10::toString(tensor.scalar_type()) + " " + c10::str(tensor.sizes()) + ", expected " +
                    c10::toString(spec.dtype) + " " + c10::str(c10::IntArrayRef(spec.sizes)),
                ErrorKind::kRuntime);
  }
  return tensor;
}

void InProcessStore::publish(const std::string& key, const std::string& value) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    values_[key] = value;
  }
  changed_.notify_all();
}

std::string InProcessStore::fetch(const std::string& key) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!changed_.wait_for(lock, timeout_, [&] { return values_.count(key) > 0; })) {
    throw Error("timed out waiting for \"" + key + "\" in the store", ErrorKind::kRuntime);
  }
  return values_.at(key);
}

InProcessCluster::InProcessCluster(int stages, int replicas, std::chrono::milliseconds timeout)
    : stages_(stages), replicas_(replicas), store_(timeout) {
  for (int d = 0; d < replicas; ++d) pipelines_.push_back(std::make_shared<InProcessHub>(stages, timeout));
  for (int s = 0; s < stages; ++s) stage_groups_.push_back(std::make_shared<InProcessReplicaHub>(replicas, timeout));
}

InProcessWorld::InProcessWorld(std::shared_ptr<InProcessCluster> cluster, int rank)
    : cluster_(std::move(cluster)),
      layout_{rank, cluster_->stages() * cluster_->replicas(), cluster_->replicas()},
      transport_(cluster_->pipeline(layout_.replica()), layout_.pipelineRank()) {
  if (layout_.replicas > 1) group_.emplace(cluster_->stageGroup(layout_.pipelineRank()), layout_.replica());
}

}  // namespace stagecut
