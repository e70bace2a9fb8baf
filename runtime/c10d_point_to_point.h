#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "core/units.h"
#include "profiler/torch_compat.h"
#include "runtime/rendezvous.h"
#include "runtime/stage_transport.h"

namespace c10d {
class Work;
}  // namespace c10d

namespace stagecut {

/// The first line of what a c10d exception says (LibTorch appends a C++ backtrace).
std::string c10dMessage(const std::exception& error);

/// The one place where c10d waits: a timeout or a lost peer becomes an Error (kRuntime) naming
/// this rank, `what` it waited for and the timeout.
void waitC10dWork(const c10::intrusive_ptr<c10d::Work>& work, const RendezvousInfo& info, const std::string& what);

/// The sends and receives of one pipeline over one c10d group (Gloo's or NCCL's) whose ranks are
/// the pipeline's stages: a send is posted and its tensor kept until it is delivered, a receive
/// returns once the tensor is here (on a GPU, once the copy into it has run, so that the op
/// that uses it is not charged for the wait).
class C10dPointToPoint {
 public:
  /// `tags_on_wire`: false for a group that pairs a rank's sends with its peer's receives by
  /// their order (NCCL's ignores tags). Every message then goes as tag 0, on Gloo too, so that
  /// a test over Gloo pairs them as NCCL does. Receives are allocated on `device`.
  C10dPointToPoint(c10::intrusive_ptr<torch_compat::C10dBackend> group, RendezvousInfo info, torch::Device device,
                   bool tags_on_wire);
  ~C10dPointToPoint();
  C10dPointToPoint(const C10dPointToPoint&) = delete;
  C10dPointToPoint& operator=(const C10dPointToPoint&) = delete;

  void sendAsync(const torch::Tensor& tensor, int peer, int tag);
  /// Posts a receive that recv() of the same peer and tag then waits for.
  void postRecv(const TensorSpec& spec, int peer, int tag);
  torch::Tensor recv(const TensorSpec& spec, int peer, int tag, const std::string& what);
  void flushSends();
  void releaseSend(int peer, int tag);
  void barrier(const std::string& what);
  /// "rank G": the global rank of pipeline stage `stage` of this rank's replica.
  std::string rankName(int stage) const;

 private:
  struct PendingSend {
    c10::intrusive_ptr<c10d::Work> work;
    std::vector<torch::Tensor> tensors;  // kept alive until delivered
    int peer;
    int tag;
  };
  struct PostedRecv {
    c10::intrusive_ptr<c10d::Work> work;
    std::vector<torch::Tensor> tensors;
    int peer;
    int tag;
  };
  int wireTag(int tag) const { return tags_on_wire_ ? tag : 0; }

  c10::intrusive_ptr<torch_compat::C10dBackend> group_;
  RendezvousInfo info_;
  torch::Device device_;
  bool tags_on_wire_;
  std::vector<PendingSend> pending_;
  std::vector<PostedRecv> posted_;  // in the order they were posted
};

}  // namespace stagecut
