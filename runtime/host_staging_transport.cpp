#include "runtime/host_staging_transport.h"

namespace stagecut {

void HostStagingTransport::sendAsync(const torch::Tensor& tensor, int peer, int tag) {
  // The host copy is the one kept until delivery: the device tensor may be freed at once.
  host_.sendAsync(tensor.to(torch::kCPU).contiguous(), peer, tag);
}

torch::Tensor HostStagingTransport::recv(const TensorSpec& spec, int peer, int tag, const std::string& what) {
  return host_.recv(spec, peer, tag, what).to(device_);
}

void HostStagingReplicaGroup::allReduceSum(torch::Tensor& tensor, const std::string& what) {
  torch::Tensor host = tensor.to(torch::kCPU).contiguous();
  host_.allReduceSum(host, what);
  tensor.copy_(host);
}

}  // namespace stagecut
