#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace stagecut {

/// What a receive expects: one microbatch's activation or gradient, its sizes and element type
/// (the stages' floating type: a bfloat16 pipeline's messages are bfloat16 on the wire).
struct TensorSpec {
  std::vector<std::int64_t> sizes;
  torch::ScalarType dtype = torch::kFloat32;
};

/// How pipeline ranks exchange activations and gradients. Sends are posted and return at once
/// (the tensor is kept until flushSends), receives block: with this pairing, op lists that the
/// simulator can finish never deadlock. The real transport is c10d Gloo; tests use an
/// in-process fake.
class StageTransport {
 public:
  virtual ~StageTransport() = default;
  /// Posts `tensor` to rank `peer` under `tag`; returns without waiting for the receiver.
  virtual void sendAsync(const torch::Tensor& tensor, int peer, int tag) = 0;
  /// Receives a tensor as `spec` says from rank `peer` under `tag`. `what` names the op and
  /// tensor for the error that a timeout raises (Error, kRuntime, naming the peer rank).
  virtual torch::Tensor recv(const TensorSpec& spec, int peer, int tag, const std::string& what) = 0;
  /// Posts the receive that a later recv() of the same `spec`, `peer` and `tag` returns, so that
  /// the peer's send goes out as soon as it is made: Gloo sends a message only once the receiver
  /// has posted its receive, and a receive posted only when the op needs it waits for the
  /// sender's network thread, which shares a core with the sender's next op. Receives must be
  /// posted in the order they are received. Transports that deliver at once ignore it.
  virtual void postRecv(const TensorSpec& spec, int peer, int tag) {
    (void)spec;
    (void)peer;
    (void)tag;
  }
  /// Waits until every posted send has been delivered (end of a step).
  virtual void flushSends() = 0;
  /// Frees the buffer of the send of `tag` to `peer` once the caller knows it was received (the
  /// peer answered it), so sent activations do not live until the end of the step.
  virtual void releaseSend(int peer, int tag) = 0;
  /// Waits until every rank reaches this call.
  virtual void barrier() = 0;
  virtual int rank() const = 0;
  virtual int worldSize() const = 0;
};

/// The ranks that run the same model stage in data-parallel replicas: how a stage's gradients
/// are summed across them after a step. The real group is c10d Gloo; tests use an in-process fake.
class ReplicaGroup {
 public:
  virtual ~ReplicaGroup() = default;
  /// Replaces `tensor` (a float tensor, the same shape on every replica) by its sum over the
  /// group. `what` names the op for the error that a timeout or a lost peer raises (Error, kRuntime).
  virtual void allReduceSum(torch::Tensor& tensor, const std::string& what) = 0;
  /// Waits until every replica reaches this call (errors as allReduceSum).
  virtual void barrier(const std::string& what) = 0;
  /// D: the number of replicas.
  virtual int size() const = 0;
  /// This rank's replica, 0..D-1.
  virtual int rank() const = 0;
};

/// Message tags, unique within a step: the activation that crosses `boundary` (from model stage
/// `boundary` to `boundary` + 1) for one of a step's `microbatches`, and the gradient that
/// crosses it back. Activations' tags are even and gradients' odd: transports that pair by
/// order keep a channel per kind (DirectionSplitTransport).
inline int activationTag(int boundary, int microbatch, int microbatches) {
  return 2 * (boundary * microbatches + microbatch);
}
inline int gradientTag(int boundary, int microbatch, int microbatches) {
  return activationTag(boundary, microbatch, microbatches) + 1;
}
inline bool isGradientTag(int tag) { return tag % 2 == 1; }

}  // namespace stagecut
