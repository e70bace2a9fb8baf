#include "runtime/main_gradients.h"

#include <algorithm>
#include <unordered_map>

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

namespace stagecut {

struct MainGradients::State {
  std::vector<torch::Tensor> weights;
  std::vector<torch::Tensor> buffers;  // per weight; undefined until its first gradient
  // The accumulators hold the hooks; a weight keeps its accumulator only weakly, so without
  // these each backward would make a new one without them.
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators;
  std::unordered_map<const c10::TensorImpl*, std::size_t> index_of;
  bool active = true;

  std::size_t indexOf(const torch::Tensor& weight) const { return index_of.at(weight.unsafeGetTensorImpl()); }

  void add(std::size_t index, const torch::Tensor& grad) {
    torch::NoGradGuard no_grad;
    torch::Tensor& buffer = buffers[index];
    if (!buffer.defined()) {
      buffer = grad.to(torch::kFloat32, /*non_blocking=*/false, /*copy=*/true);
    } else if (buffer.is_cuda() || grad.scalar_type() == torch::kFloat32) {
      buffer.add_(grad);  // CUDA's kernels cast as they read
    } else {
      addInSlices(buffer, grad);
    }
  }

  // On the CPU, adding a bfloat16 tensor to a float32 one first copies all of it to float32:
  // a transient of 4 bytes a parameter of the largest weight (7.8 MiB for an 8000 x 256
  // embedding), which no framework's fused accumulation has. Slices bound it to 1 MiB.
  static void addInSlices(torch::Tensor& buffer, const torch::Tensor& grad) {
    constexpr std::int64_t kSlice = 1 << 18;
    torch::Tensor flat_buffer = buffer.view({-1});
    const torch::Tensor flat_grad = grad.reshape({-1});
    for (std::int64_t start = 0; start < flat_buffer.numel(); start += kSlice) {
      const std::int64_t length = std::min(kSlice, flat_buffer.numel() - start);
      flat_buffer.narrow(0, start, length).add_(flat_grad.narrow(0, start, length));
    }
  }
};

namespace {

// Runs after a weight's accumulator has put the gradient in .grad: moves it into the buffer.
class MoveToMainGradient : public torch::autograd::FunctionPostHook {
 public:
  MoveToMainGradient(std::shared_ptr<MainGradients::State> state, std::size_t index)
      : state_(std::move(state)), index_(index) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list&) override {
    if (!state_->active) return outputs;
    torch::Tensor& weight = state_->weights[index_];
    if (weight.grad().defined()) {
      state_->add(index_, weight.grad());
      weight.mutable_grad().reset();
    }
    return outputs;
  }

 private:
  std::shared_ptr<MainGradients::State> state_;
  std::size_t index_;
};

}  // namespace

MainGradients::MainGradients(const std::vector<torch::Tensor>& weights) : state_(std::make_shared<State>()) {
  state_->weights = weights;
  state_->buffers.resize(weights.size());
  for (std::size_t i = 0; i < weights.size(); ++i) {
    state_->index_of.emplace(weights[i].unsafeGetTensorImpl(), i);
    auto accumulator = torch::autograd::impl::grad_accumulator(weights[i]);
    if (!accumulator) continue;  // not a leaf that requires grad: no gradient ever comes
    accumulator->add_post_hook(std::make_unique<MoveToMainGradient>(state_, i));
    state_->accumulators.push_back(std::move(accumulator));
  }
}

MainGradients::~MainGradients() {
  state_->active = false;
  // The accumulators own the hooks, which own the state: letting them go breaks that cycle, so
  // the buffers are freed with the last of them.
  state_->accumulators.clear();
}

void MainGradients::add(const torch::Tensor& weight, const torch::Tensor& grad) {
  state_->add(state_->indexOf(weight), grad);
}

torch::Tensor MainGradients::of(const torch::Tensor& weight) const { return state_->buffers[state_->indexOf(weight)]; }

std::vector<torch::Tensor> MainGradients::all() {
  for (std::size_t i = 0; i < state_->buffers.size(); ++i) {
    torch::Tensor& buffer = state_->buffers[i];
    if (!buffer.defined()) buffer = torch::zeros_like(state_->weights[i], torch::dtype(torch::kFloat32));
  }
  return state_->buffers;
}

void MainGradients::zero() {
  for (auto& buffer : state_->buffers) {
    if (buffer.defined()) buffer.zero_();
  }
}

std::uint64_t MainGradients::bytes() const {
  std::uint64_t total = 0;
  for (const auto& buffer : state_->buffers) {
    if (buffer.defined()) total += static_cast<std::uint64_t>(buffer.nbytes());
  }
  return total;
}

bool needsMainGradients(const std::vector<torch::Tensor>& weights) {
  for (const auto& weight : weights) {
    if (weight.scalar_type() == torch::kBFloat16 || weight.scalar_type() == torch::kHalf) return true;
  }
  return false;
}

}  // namespace stagecut
