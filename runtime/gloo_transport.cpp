#include "runtime/gloo_transport.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "core/error.h"
#include "runtime/c10d_point_to_point.h"
#include "runtime/nccl_transport.h"

namespace stagecut {

namespace {

class GlooReplicaGroup : public ReplicaGroup {
 public:
  GlooReplicaGroup(c10::intrusive_ptr<c10d::ProcessGroupGloo> group, const RendezvousInfo& info)
      : group_(std::move(group)), info_(info) {}

  void allReduceSum(torch::Tensor& tensor, const std::string& what) override {
    std::vector<torch::Tensor> tensors = {tensor};
    waitC10dWork(group_->allreduce(tensors), info_, what + " with the replicas of stage " + std::to_string(info_.layout().pipelineRank()));
  }
  int size() const override { return info_.replicas; }
  int rank() const override { return info_.layout().replica(); }
  void barrier(const std::string& what) override {
    waitC10dWork(group_->barrier(), info_, what + ": waiting for the other replicas of stage " + std::to_string(info_.layout().pipelineRank()));
  }

 private:
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group_;
  RendezvousInfo info_;
};

}  // namespace

struct GlooTransport::Impl {
  RendezvousInfo info;
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> pipeline;
  std::unique_ptr<GlooReplicaGroup> replicas;
  std::unique_ptr<C10dPointToPoint> messages;  // over `pipeline`

  // Every rank announces itself under its own key; waiting for all of them names the ones that
  // never came (not started, or started with another MASTER_ADDR / MASTER_PORT).
  void meet() {
    store->set("stagecut/joined/" + std::to_string(info.rank), std::vector<std::uint8_t>{1});
    std::vector<std::string> keys;
    for (int r = 0; r < info.world_size; ++r) keys.push_back("stagecut/joined/" + std::to_string(r));
    try {
      store->wait(keys, info.timeout);
    } catch (const std::exception&) {
      std::string missing;
      int count = 0;
      for (int r = 0; r < info.world_size; ++r) {
        if (store->check({keys[r]})) continue;
        missing += (missing.empty() ? "" : ", ") + std::to_string(r);
        ++count;
      }
      throw Error("rank " + std::to_string(info.rank) + ": rank" + (count == 1 ? " " : "s ") + missing +
                      " did not join within " + timeoutSeconds(info.timeout) + " s at " +
                      info.master_addr + ":" + std::to_string(info.master_port) +
                      "; check that every rank was started, with the same MASTER_ADDR and MASTER_PORT",
                  ErrorKind::kRuntime);
    }
  }
};

namespace {

// LibTorch's c10d logs every failed connection attempt on stderr (through glog: several lines per
// retry); what failed reaches the user in this rank's one line instead. Scoped to the rendezvous,
// where stagecut itself prints nothing.
class LibTorchLogsSilenced {
 public:
  LibTorchLogsSilenced() {
    std::fflush(stderr);
    saved_ = ::dup(STDERR_FILENO);
    const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (saved_ >= 0 && null >= 0) ::dup2(null, STDERR_FILENO);
    if (null >= 0) ::close(null);
  }
  ~LibTorchLogsSilenced() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    ::dup2(saved_, STDERR_FILENO);
    ::close(saved_);
  }
  LibTorchLogsSilenced(const LibTorchLogsSilenced&) = delete;
  LibTorchLogsSilenced& operator=(const LibTorchLogsSilenced&) = delete;

 private:
  int saved_ = -1;
};

// The address this rank's Gloo device listens on, which its peers connect to. GLOO_SOCKET_IFNAME
// names the interface, as for PyTorch (the first of a list). Without it: rank 0's address where
// this host has it (one machine: the launcher's 127.0.0.1), else the address this host's name
// resolves to (LibTorch's default). Binding rank 0's address on another host fails: a rank of a
// two-host run cannot listen where rank 0 does.
std::shared_ptr<::gloo::transport::Device> glooDevice(const RendezvousInfo& info) {
  if (const char* names = std::getenv("GLOO_SOCKET_IFNAME"); names != nullptr && *names != '\0') {
    const std::string name = std::string(names).substr(0, std::string(names).find(','));
    try {
      return c10d::ProcessGroupGloo::createDeviceForInterface(name);
    } catch (const std::exception& e) {
      throw Error("rank " + std::to_string(info.rank) + ": GLOO_SOCKET_IFNAME=" + names + ": cannot listen on " +
                      "interface " + name + " (" + c10dMessage(e) + "); name an interface of this host (ip link)",
                  ErrorKind::kInput);
    }
  }
  try {
    return c10d::ProcessGroupGloo::createDeviceForHostname(info.master_addr);
  } catch (const std::exception&) {
    return c10d::ProcessGroupGloo::createDefaultDevice();
  }
}

}  // namespace

GlooTransport::GlooTransport(const RendezvousInfo& info) : impl_(std::make_unique<Impl>()) {
  impl_->info = info;
  if (info.replicas < 1 || info.world_size % info.replicas != 0) {
    throw Error("rank " + std::to_string(info.rank) + ": WORLD_SIZE " + std::to_string(info.world_size) +
                    " is not a multiple of " + std::to_string(info.replicas) + " replicas",
                ErrorKind::kInput);
  }
  const LibTorchLogsSilenced quiet;
  try {
    c10d::TCPStoreOptions options;
    options.port = static_cast<std::uint16_t>(info.master_port);
    options.isServer = info.rank == 0;
    options.numWorkers = static_cast<std::size_t>(info.world_size);
    options.waitWorkers = false;  // meet() waits, and names who is missing
    options.timeout = info.timeout;
    impl_->store = c10::make_intrusive<c10d::TCPStore>(info.master_addr, options);
  } catch (const std::exception& e) {
    throw Error("rank " + std::to_string(info.rank) + ": could not " +
                    (info.rank == 0 ? "open the rendezvous store on port " + std::to_string(info.master_port)
                                    : "reach rank 0's rendezvous store at " + info.master_addr + ":" +
                                          std::to_string(info.master_port) + " within " + timeoutSeconds(info.timeout) +
                                          " s") +
                    " (" + c10dMessage(e) + "); check MASTER_ADDR, MASTER_PORT and that rank 0 was started",
                ErrorKind::kRuntime);
  }
  impl_->meet();
  try {
    auto group_options = c10d::ProcessGroupGloo::Options::create(info.timeout);
    group_options->devices.push_back(glooDevice(info));
    const int stages = info.layout().pipelineRanks();
    impl_->pipeline = c10::make_intrusive<c10d::ProcessGroupGloo>(
        c10::make_intrusive<c10d::PrefixStore>("pipeline/" + std::to_string(info.layout().replica()), impl_->store),
        info.layout().pipelineRank(), stages, group_options);
    impl_->messages = std::make_unique<C10dPointToPoint>(impl_->pipeline, info, torch::Device(torch::kCPU), true);
    if (info.replicas > 1) {
      auto replica_group = c10::make_intrusive<c10d::ProcessGroupGloo>(
          c10::make_intrusive<c10d::PrefixStore>("replicas/" + std::to_string(info.layout().pipelineRank()), impl_->store),
          info.layout().replica(), info.replicas, group_options);
      impl_->replicas = std::make_unique<GlooReplicaGroup>(std::move(replica_group), info);
    }
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error("rank " + std::to_string(info.rank) + ": could not connect the process groups within " +
                    timeoutSeconds(info.timeout) + " s (" + c10dMessage(e) + ")",
                ErrorKind::kRuntime);
  }
}

GlooTransport::~GlooTransport() = default;

void GlooTransport::sendAsync(const torch::Tensor& tensor, int peer, int tag) {
  impl_->messages->sendAsync(tensor, peer, tag);
}

void GlooTransport::postRecv(const TensorSpec& spec, int peer, int tag) {
  impl_->messages->postRecv(spec, peer, tag);
}

torch::Tensor GlooTransport::recv(const TensorSpec& spec, int peer, int tag, const std::string& what) {
  return impl_->messages->recv(spec, peer, tag, what);
}

void GlooTransport::flushSends() { impl_->messages->flushSends(); }

void GlooTransport::releaseSend(int peer, int tag) { impl_->messages->releaseSend(peer, tag); }

void GlooTransport::barrier() { impl_->messages->barrier("waiting in a barrier for the other ranks"); }

int GlooTransport::rank() const { return impl_->info.layout().pipelineRank(); }
int GlooTransport::worldSize() const { return impl_->info.layout().pipelineRanks(); }

ReplicaGroup* GlooTransport::replicaGroup() { return impl_->replicas.get(); }

std::unique_ptr<StageTransport> GlooTransport::openNcclTransport(const torch::Device& device) {
  return stagecut::openNcclTransport(impl_->store, impl_->info, device, *this);
}

void GlooTransport::publish(const std::string& key, const std::string& value) {
  impl_->store->set(key, std::vector<std::uint8_t>(value.begin(), value.end()));
}

std::string GlooTransport::fetch(const std::string& key) {
  try {
    const auto bytes = impl_->store->get(key);
    return std::string(bytes.begin(), bytes.end());
  } catch (const std::exception& e) {
    throw Error("rank " + std::to_string(impl_->info.rank) + ": waiting for \"" + key + "\" failed (" +
                    c10dMessage(e) + ")",
                ErrorKind::kRuntime);
  }
}

namespace {

// A whole number in [min, max] from torchrun's variable `name`, written in digits.
int environmentInteger(const char* name, int min, int max, const std::string& rule) {
  const char* value = std::getenv(name);
  if (value == nullptr) throw Error(std::string(name) + " is not set; " + rule);
  const std::string text = value;
  bool digits = !text.empty() && text.size() <= 9;
  for (char c : text) digits = digits && c >= '0' && c <= '9';
  const int number = digits ? std::stoi(text) : -1;
  if (!digits || number < min || number > max) {
    throw Error(std::string(name) + "=" + text + ": " + rule);
  }
  return number;
}

}  // namespace

RendezvousInfo rendezvousFromEnvironment(int replicas, std::chrono::milliseconds timeout) {
  RendezvousInfo info;
  info.world_size = environmentInteger("WORLD_SIZE", 1, 65536, "must be the number of ranks, 1 to 65536, as torchrun sets it");
  info.rank = environmentInteger("RANK", 0, info.world_size - 1,
                                 "must be this process's rank, 0 to " + std::to_string(info.world_size - 1) +
                                     " with WORLD_SIZE=" + std::to_string(info.world_size));
  if (const char* address = std::getenv("MASTER_ADDR")) {
    info.master_addr = address;
    if (info.master_addr.empty()) throw Error("MASTER_ADDR is empty; set it to rank 0's host name or address");
  }
  if (std::getenv("MASTER_PORT")) {
    info.master_port = environmentInteger("MASTER_PORT", 1, 65535, "must be rank 0's port, 1 to 65535");
  }
  info.replicas = replicas;
  info.timeout = timeout;
  return info;
}

void GlooWorld::connect() { transport_ = std::make_unique<GlooTransport>(info_); }

GlooTransport& GlooWorld::connected() {
  if (!transport_) {
    throw Error("rank " + std::to_string(info_.rank) + ": the world was used before connect()", ErrorKind::kRuntime);
  }
  return *transport_;
}

}  // namespace stagecut
