#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "runtime/stage_transport.h"

namespace stagecut {

/// Carries the tensors of a stage that runs on a GPU over a transport of host tensors (Gloo's
/// sends and receives): each sent tensor is copied to the host first, each received one to
/// `device`. The copies are part of the op that sends or receives, as they are for any pipeline
/// whose ranks exchange through host memory; the link probe goes through the same copies, so
/// the prediction charges them to the boundaries.
class HostStagingTransport : public StageTransport {
 public:
  /// `host` must outlive this transport.
  HostStagingTransport(StageTransport& host, torch::Device device) : host_(host), device_(device) {}

  void sendAsync(const torch::Tensor& tensor, int peer, int tag) override;
  void postRecv(const TensorSpec& spec, int peer, int tag) override { host_.postRecv(spec, peer, tag); }
  torch::Tensor recv(const TensorSpec& spec, int peer, int tag, const std::string& what) override;
  void flushSends() override { host_.flushSends(); }
  void releaseSend(int peer, int tag) override { host_.releaseSend(peer, tag); }
  void barrier() override { host_.barrier(); }
  int rank() const override { return host_.rank(); }
  int worldSize() const override { return host_.worldSize(); }

 private:
  StageTransport& host_;
  torch::Device device_;
};

/// The same for a data-parallel group: the all-reduce runs on a host copy of the tensor, which is
/// then copied back into it.
class HostStagingReplicaGroup : public ReplicaGroup {
 public:
  /// `host` must outlive this group.
  explicit HostStagingReplicaGroup(ReplicaGroup& host) : host_(host) {}

  void allReduceSum(torch::Tensor& tensor, const std::string& what) override;
  void barrier(const std::string& what) override { host_.barrier(what); }
  int size() const override { return host_.size(); }
  int rank() const override { return host_.rank(); }

 private:
  ReplicaGroup& host_;
};

}  // namespace stagecut
