// The host staging that carries a GPU stage's tensors over Gloo, against a recording fake
// transport: what reaches the host transport is a contiguous CPU copy, what comes back lands on
// the rank's device, and an all-reduce's result lands in the caller's own tensor.
#include <catch2/catch.hpp>

#include <map>

#include "runtime/host_staging_transport.h"

namespace {

// Keeps what was sent, hands it back on receive, and counts the calls passed through.
class RecordingTransport : public stagecut::StageTransport {
 public:
  void sendAsync(const torch::Tensor& tensor, int peer, int tag) override {
    CHECK(tensor.device().is_cpu());
    CHECK(tensor.is_contiguous());
    sent[{peer, tag}] = tensor;
  }
  torch::Tensor recv(const stagecut::TensorSpec& spec, int peer, int tag, const std::string&) override {
    return sent.at({peer, tag}).reshape(spec.sizes);
  }
  void flushSends() override { ++flushes; }
  void releaseSend(int, int) override { ++releases; }
  void barrier() override { ++barriers; }
  int rank() const override { return 1; }
  int worldSize() const override { return 3; }

  std::map<std::pair<int, int>, torch::Tensor> sent;
  int flushes = 0, releases = 0, barriers = 0;
};

class DoublingGroup : public stagecut::ReplicaGroup {
 public:
  void allReduceSum(torch::Tensor& tensor, const std::string&) override {
    CHECK(tensor.device().is_cpu());
    CHECK(tensor.is_contiguous());
    tensor.mul_(2);
  }
  void barrier(const std::string&) override { ++barriers; }
  int size() const override { return 2; }
  int rank() const override { return 0; }
  int barriers = 0;
};

}  // namespace

TEST_CASE("host staging sends contiguous host copies and receives onto the rank's device", "[runtime][staging]") {
  RecordingTransport host;
  const torch::Device device(torch::kCPU);
  stagecut::HostStagingTransport staged(host, device);
  const torch::Tensor activation = torch::arange(6, torch::kFloat).reshape({2, 3}).t();  // not contiguous
  REQUIRE_FALSE(activation.is_contiguous());
  staged.sendAsync(activation, 2, 7);
  const torch::Tensor received = staged.recv({{3, 2}}, 2, 7, "F(3)'s activation");
  CHECK(received.device() == device);
  CHECK(torch::equal(received, activation));
  staged.flushSends();
  staged.releaseSend(2, 7);
  staged.barrier();
  CHECK(host.flushes == 1);
  CHECK(host.releases == 1);
  CHECK(host.barriers == 1);
  CHECK(staged.rank() == 1);
  CHECK(staged.worldSize() == 3);
}

TEST_CASE("a staged all-reduce writes the sum into the caller's tensor", "[runtime][staging]") {
  DoublingGroup host;
  stagecut::HostStagingReplicaGroup staged(host);
  torch::Tensor buffer = torch::arange(8, torch::kFloat);
  torch::Tensor flat = buffer.narrow(0, 2, 4);  // a view: the sum must land in the caller's storage
  staged.allReduceSum(flat, "A");
  CHECK(torch::equal(buffer, torch::tensor({0.f, 1.f, 4.f, 6.f, 8.f, 10.f, 6.f, 7.f})));
  staged.barrier("A");
  CHECK(host.barriers == 1);
  CHECK(staged.size() == 2);
  CHECK(staged.rank() == 0);
}
