#pragma once

#include <memory>

#include "runtime/c10d_point_to_point.h"
#include "runtime/stage_transport.h"

namespace stagecut {

/// A StageTransport over two groups that pair a rank's sends with its peer's receives by their
/// order, not by tag, as NCCL's point-to-point calls do. Between two neighbours a single such
/// group would carry both directions on one stream: a rank's send of an activation would wait
/// for the peer's receive, which waits behind the peer's own send of a gradient, which waits for
/// this rank's receive behind its send. So `downstream` carries what a rank sends to later ranks
/// (activations, the link probe's ping) and `upstream` what it sends to earlier ones (input
/// gradients, the probe's reply): each carries one direction, in the order both ends issue it,
/// which every schedule keeps (firstMessageOrderMismatch, schedule/message_order.h: with one
/// chunk per rank, as validate runs them, a direction carries one kind of tensor). Barriers go
/// through `control`, which must outlive this transport.
class DirectionSplitTransport : public StageTransport {
 public:
  DirectionSplitTransport(std::unique_ptr<C10dPointToPoint> downstream, std::unique_ptr<C10dPointToPoint> upstream,
                          StageTransport& control)
      : downstream_(std::move(downstream)), upstream_(std::move(upstream)), control_(control) {}

  void sendAsync(const torch::Tensor& tensor, int peer, int tag) override { towards(peer).sendAsync(tensor, peer, tag); }
  void postRecv(const TensorSpec& spec, int peer, int tag) override {
    from(peer).postRecv(spec, peer, tag);
  }
  torch::Tensor recv(const TensorSpec& spec, int peer, int tag, const std::string& what) override {
    return from(peer).recv(spec, peer, tag, what);
  }
  void flushSends() override {
    downstream_->flushSends();
    upstream_->flushSends();
  }
  void releaseSend(int peer, int tag) override { towards(peer).releaseSend(peer, tag); }
  void barrier() override { control_.barrier(); }
  int rank() const override { return control_.rank(); }
  int worldSize() const override { return control_.worldSize(); }

 private:
  C10dPointToPoint& towards(int peer) { return peer > rank() ? *downstream_ : *upstream_; }
  C10dPointToPoint& from(int peer) { return peer < rank() ? *downstream_ : *upstream_; }

  std::unique_ptr<C10dPointToPoint> downstream_;
  std::unique_ptr<C10dPointToPoint> upstream_;
  StageTransport& control_;
};

}  // namespace stagecut
