#pragma once

#include <memory>

#include "runtime/c10d_point_to_point.h"
#include "runtime/stage_transport.h"

namespace stagecut {

/// The groups of an order-paired pipeline: one per direction (towards later or earlier ranks)
/// and tensor kind (activations, gradients; told apart by their tags' parity, isGradientTag).
struct OrderedChannels {
  std::unique_ptr<C10dPointToPoint> activations_down;
  std::unique_ptr<C10dPointToPoint> activations_up;
  std::unique_ptr<C10dPointToPoint> gradients_down;
  std::unique_ptr<C10dPointToPoint> gradients_up;
};

/// A StageTransport over groups that pair a rank's sends with its peer's receives by their
/// order, not by tag, as NCCL's point-to-point calls do. Between two neighbours a single such
/// group would carry both directions on one stream: a rank's send of an activation would wait
/// for the peer's receive, which waits behind the peer's own send of a gradient, which waits for
/// this rank's receive behind its send. And one group per direction is not enough once a rank
/// runs several chunks: in a V, rank r sends rank r + 1 both chunk 0's activations and chunk
/// 1's input gradients, and under interleaving rank N - 1 sends rank 0 activations beside
/// gradients for rank N - 2. So each (direction, kind) has its own group, which carries messages
/// in the order both ends issue them: every schedule keeps that order per sender, receiver and
/// kind (firstMessageOrderMismatch, schedule/message_order.h). The link probe's ping travels as
/// an activation, its reply as a gradient. Barriers go through `control`, which must outlive
/// this transport.
class DirectionSplitTransport : public StageTransport {
 public:
  DirectionSplitTransport(OrderedChannels channels, StageTransport& control)
      : channels_(std::move(channels)), control_(control) {}

  void sendAsync(const torch::Tensor& tensor, int peer, int tag) override {
    channel(peer > rank(), tag).sendAsync(tensor, peer, tag);
  }
  void postRecv(const TensorSpec& spec, int peer, int tag) override { channel(peer < rank(), tag).postRecv(spec, peer, tag); }
  torch::Tensor recv(const TensorSpec& spec, int peer, int tag, const std::string& what) override {
    return channel(peer < rank(), tag).recv(spec, peer, tag, what);
  }
  void flushSends() override {
    for (C10dPointToPoint* group : {channels_.activations_down.get(), channels_.activations_up.get(),
                                    channels_.gradients_down.get(), channels_.gradients_up.get()}) {
      group->flushSends();
    }
  }
  void releaseSend(int peer, int tag) override { channel(peer > rank(), tag).releaseSend(peer, tag); }
  void barrier() override { control_.barrier(); }
  int rank() const override { return control_.rank(); }
  int worldSize() const override { return control_.worldSize(); }

 private:
  // `down`: the message goes from an earlier rank to a later one.
  C10dPointToPoint& channel(bool down, int tag) {
    if (isGradientTag(tag)) return down ? *channels_.gradients_down : *channels_.gradients_up;
    return down ? *channels_.activations_down : *channels_.activations_up;
  }

  OrderedChannels channels_;
  StageTransport& control_;
};

}  // namespace stagecut
