#include "runtime/gloo_transport.h"

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "core/error.h"

namespace stagecut {

namespace {

std::string firstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace

struct GlooTransport::Impl {
  RendezvousInfo info;
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group;
  struct PendingSend {
    c10::intrusive_ptr<c10d::Work> work;
    std::vector<torch::Tensor> tensors;  // kept alive until delivered
    int peer;
  };
  std::vector<PendingSend> pending;

  // The one place where c10d waits: a timeout or a lost peer becomes an Error naming them.
  void wait(const c10::intrusive_ptr<c10d::Work>& work, const std::string& what) {
    try {
      work->wait(info.timeout);
    } catch (const std::exception& e) {
      throw Error("rank " + std::to_string(info.rank) + ": " + what + " failed or timed out after " +
                      std::to_string(info.timeout.count() / 1000) + " s (" + firstLine(e.what()) + ")",
                  ErrorKind::kRuntime);
    }
  }
};

GlooTransport::GlooTransport(const RendezvousInfo& info) : impl_(std::make_unique<Impl>()) {
  impl_->info = info;
  try {
    c10d::TCPStoreOptions options;
    options.port = static_cast<std::uint16_t>(info.master_port);
    options.isServer = info.rank == 0;
    options.numWorkers = static_cast<std::size_t>(info.world_size);
    options.waitWorkers = true;
    options.timeout = info.timeout;
    impl_->store = c10::make_intrusive<c10d::TCPStore>(info.master_addr, options);
    auto group_options = c10d::ProcessGroupGloo::Options::create(info.timeout);
    group_options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(info.master_addr));
    impl_->group = c10::make_intrusive<c10d::ProcessGroupGloo>(impl_->store, info.rank, info.world_size,
                                                               group_options);
  } catch (const std::exception& e) {
    throw Error("rank " + std::to_string(info.rank) + ": could not meet the other " +
                    std::to_string(info.world_size - 1) + " rank(s) at " + info.master_addr + ":" +
                    std::to_string(info.master_port) + " within " +
                    std::to_string(info.timeout.count() / 1000) + " s (" + firstLine(e.what()) +
                    "); check MASTER_ADDR, MASTER_PORT and that every rank was started",
                ErrorKind::kRuntime);
  }
}

GlooTransport::~GlooTransport() = default;

void GlooTransport::sendAsync(const torch::Tensor& tensor, int peer, int tag) {
  Impl::PendingSend send;
  send.tensors = {tensor.detach().contiguous()};
  send.peer = peer;
  send.work = impl_->group->send(send.tensors, peer, tag);
  impl_->pending.push_back(std::move(send));
}

torch::Tensor GlooTransport::recv(const std::vector<std::int64_t>& shape, int peer, int tag,
                                  const std::string& what) {
  std::vector<torch::Tensor> tensors = {torch::empty(shape, torch::kFloat32)};
  impl_->wait(impl_->group->recv(tensors, peer, tag), "waiting for " + what + " from rank " + std::to_string(peer));
  return tensors[0];
}

void GlooTransport::flushSends() {
  for (auto& send : impl_->pending) {
    impl_->wait(send.work, "sending to rank " + std::to_string(send.peer));
  }
  impl_->pending.clear();
}

void GlooTransport::barrier() { impl_->wait(impl_->group->barrier(), "waiting in a barrier for the other ranks"); }

int GlooTransport::rank() const { return impl_->info.rank; }
int GlooTransport::worldSize() const { return impl_->info.world_size; }

void GlooTransport::publish(const std::string& key, const std::string& value) {
  impl_->store->set(key, std::vector<std::uint8_t>(value.begin(), value.end()));
}

std::string GlooTransport::fetch(const std::string& key) {
  try {
    const auto bytes = impl_->store->get(key);
    return std::string(bytes.begin(), bytes.end());
  } catch (const std::exception& e) {
    throw Error("rank " + std::to_string(impl_->info.rank) + ": waiting for \"" + key + "\" failed (" +
                    firstLine(e.what()) + ")",
                ErrorKind::kRuntime);
  }
}

}  // namespace stagecut
