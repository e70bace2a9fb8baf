#include "runtime/c10d_point_to_point.h"

#include <algorithm>
#include <iterator>

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include "core/error.h"
#include "runtime/rank_device.h"

namespace stagecut {

std::string c10dMessage(const std::exception& error) {
  const std::string text = error.what();
  return text.substr(0, text.find('\n'));
}

void waitC10dWork(const c10::intrusive_ptr<c10d::Work>& work, const RendezvousInfo& info, const std::string& what) {
  try {
    work->wait(info.timeout);
  } catch (const std::exception& e) {
    throw Error("rank " + std::to_string(info.rank) + ": " + what + " failed or timed out after " +
                    timeoutSeconds(info.timeout) + " s (" + c10dMessage(e) + ")",
                ErrorKind::kRuntime);
  }
}

C10dPointToPoint::C10dPointToPoint(c10::intrusive_ptr<torch_compat::C10dBackend> group, RendezvousInfo info,
                                   torch::Device device, bool tags_on_wire)
    : group_(std::move(group)), info_(std::move(info)), device_(device), tags_on_wire_(tags_on_wire) {}

C10dPointToPoint::~C10dPointToPoint() = default;

void C10dPointToPoint::sendAsync(const torch::Tensor& tensor, int peer, int tag) {
  PendingSend send;
  send.tensors = {tensor.detach().contiguous()};
  send.peer = peer;
  send.tag = tag;
  send.work = group_->send(send.tensors, peer, wireTag(tag));
  pending_.push_back(std::move(send));
}

void C10dPointToPoint::postRecv(const TensorSpec& spec, int peer, int tag) {
  PostedRecv posted;
  posted.tensors = {torch::empty(spec.sizes, torch::TensorOptions().dtype(spec.dtype).device(device_))};
  posted.peer = peer;
  posted.tag = tag;
  posted.work = group_->recv(posted.tensors, peer, wireTag(tag));
  posted_.push_back(std::move(posted));
}

torch::Tensor C10dPointToPoint::recv(const TensorSpec& spec, int peer, int tag, const std::string& what) {
  auto posted = std::find_if(posted_.begin(), posted_.end(),
                             [&](const PostedRecv& candidate) { return candidate.peer == peer && candidate.tag == tag; });
  if (posted == posted_.end()) {
    postRecv(spec, peer, tag);
    posted = std::prev(posted_.end());
  }
  const c10::intrusive_ptr<c10d::Work> work = posted->work;
  std::vector<torch::Tensor> tensors = std::move(posted->tensors);
  posted_.erase(posted);
  waitC10dWork(work, info_, "waiting for " + what + " from " + rankName(peer));
  // NCCL's wait only orders the rank's stream after the copy; the op's clock starts after it.
  waitForDevice(device_);
  return tensors[0];
}

void C10dPointToPoint::flushSends() {
  for (auto& send : pending_) waitC10dWork(send.work, info_, "sending to " + rankName(send.peer));
  pending_.clear();
}

void C10dPointToPoint::releaseSend(int peer, int tag) {
  for (auto it = pending_.begin(); it != pending_.end(); ++it) {
    if (it->peer != peer || it->tag != tag) continue;
    waitC10dWork(it->work, info_, "sending to " + rankName(peer));
    pending_.erase(it);
    return;
  }
}

void C10dPointToPoint::barrier(const std::string& what) { waitC10dWork(group_->barrier(), info_, what); }

std::string C10dPointToPoint::rankName(int pipeline_rank) const {
  const RankLayout layout = info_.layout();
  return "rank " + std::to_string(RankLayout::globalRank(layout.replica(), pipeline_rank, layout.pipelineRanks()));
}

}  // namespace stagecut
